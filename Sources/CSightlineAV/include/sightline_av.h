// sightline_av.h: FFmpeg's libavcodec and libavformat for Swift: H.264
// through libx264 and back, a muxer for relays and clip files, and a reader
// that demuxes and decodes video files and stream URLs.
//
// Why it exists: libavcodec's API is C, but using it from Swift means
// AVERROR macros (function-like, not importable), av_opt_set on private
// codec options by name, AVFrame/AVPacket lifetimes and the send/receive
// loop. This shim hides those behind an opaque encoder, decoder, muxer and
// reader with one call each, and turns every failure into a code and a
// message in an sl_av_error that Swift turns into a thrown error in exactly
// one place (Sources/SightlineCore/Video/AVError.swift).
//
// Threads: an encoder, decoder, muxer or reader belongs to one thread at a
// time (only sl_av_muxer_interrupt may come from another); the functions
// keep no global state beyond libav's log level, set once.
#ifndef SIGHTLINE_AV_H
#define SIGHTLINE_AV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sl_av_error {
    int code;            // 0 when fine; a negative AVERROR or -1
    char message[256];
} sl_av_error;

typedef struct sl_av_encoder sl_av_encoder;
typedef struct sl_av_decoder sl_av_decoder;

// One encoded access unit, Annex B; `data` is owned by the encoder and
// valid until its next encode or close.
typedef struct sl_av_packet {
    const uint8_t *data;
    size_t size;
    int is_key;          // an IDR (SPS and PPS precede its slices)
} sl_av_packet;

// A decoded picture in BGR24, owned by the decoder and valid until its
// next decode or close.
typedef struct sl_av_picture {
    const uint8_t *data;
    int width;
    int height;
    int stride;          // bytes per row
} sl_av_picture;

// Opens libx264 (profile high, 8-bit 4:2:0) for width x height pictures
// (both even) at fps_num/fps_den: no B-frames, an IDR every `keyint`
// frames (and when asked), SPS and PPS repeated before every IDR, one
// packet out for every frame in (tune must include zerolatency, which
// turns the lookahead off). `preset` and `tune` are x264's names; `crf`
// is the constant quality (used when bitrate_kbps is 0); bitrate_kbps > 0
// asks for that average bitrate with a one-second VBV buffer instead.
// `threads` 1 keeps the encoder on the calling thread; more gives x264
// sliced threads (one slice per thread). `x264_params` (NULL or empty:
// none) are more x264 options, `key=value:key=value` as x264's --x264-params
// takes them. NULL on failure, with err set.
sl_av_encoder *sl_av_encoder_open(int width, int height, int fps_num, int fps_den, const char *preset,
                                  const char *tune, int crf, int bitrate_kbps, int keyint, int threads,
                                  const char *x264_params, sl_av_error *err);

// Encodes one picture: `pixels` are `channels` bytes a pixel (3: BGR24,
// 4: BGRX, 1: gray), rows `stride` bytes apart, at least the encoder's
// width x height (a larger picture's extra right column or bottom row is
// ignored). force_keyframe makes this frame an IDR. Converts to YUV 4:2:0
// with libswscale (BT.601, limited range) and fills *out. Returns 0 or the
// error code.
int sl_av_encoder_encode(sl_av_encoder *enc, const uint8_t *pixels, int stride, int channels,
                         int force_keyframe, sl_av_packet *out, sl_av_error *err);

void sl_av_encoder_close(sl_av_encoder *enc);

// Opens libavcodec's H.264 decoder (one thread, low delay: one access unit
// in, its picture out). NULL on failure, with err set.
sl_av_decoder *sl_av_decoder_open(sl_av_error *err);

// Decodes one Annex B access unit. *got is 1 when a picture came out
// (converted to BGR24 in *out), 0 when the decoder needs more input.
int sl_av_decoder_decode(sl_av_decoder *dec, const uint8_t *data, size_t size, int *got, sl_av_picture *out,
                         sl_av_error *err);

void sl_av_decoder_close(sl_av_decoder *dec);

// --- muxer: H.264 to a relay (RTSP ANNOUNCE/RECORD over TCP, RTMP) or a file (fragmented MP4) ---
typedef struct sl_av_muxer sl_av_muxer;

// Opens `url` (a relay's URL or a file path) with libavformat's `format`
// ("rtsp", "flv" for rtmp://, "mp4") for one H.264 stream of width x height
// whose SPS and PPS are `extradata` (Annex B), and writes the header (for
// RTSP: ANNOUNCE with the SDP, SETUP, RECORD, over TCP). `options` (NULL or
// empty: none) are the muxer's options as `key=value:key=value`, e.g.
// `movflags=frag_keyframe+empty_moov+default_base_moof`. Every blocking step
// gives up after `timeout_ms` (or when interrupted). NULL on failure, with
// err set.
sl_av_muxer *sl_av_muxer_open(const char *url, const char *format, int width, int height,
                              const uint8_t *extradata, size_t extradata_size, const char *options, int timeout_ms,
                              sl_av_error *err);

// Sends one access unit (Annex B; the muxer converts where its format needs
// it) with its presentation time in milliseconds, increasing. 0 or the error.
int sl_av_muxer_write(sl_av_muxer *m, const uint8_t *data, size_t size, int64_t pts_ms, int is_key,
                      sl_av_error *err);

// Any thread: makes the muxer's blocking call under way (and any later one)
// give up at once, so the owner can close it without waiting for the network.
void sl_av_muxer_interrupt(sl_av_muxer *m);

// Ends the stream (the trailer, unless interrupted) and frees everything.
void sl_av_muxer_close(sl_av_muxer *m);

// Ends the stream like sl_av_muxer_close, but says whether the trailer (for
// MP4: the last fragment and the index) was written. 0 or the error.
int sl_av_muxer_finish(sl_av_muxer *m, sl_av_error *err);

// --- fragmenter: H.264 to fragmented MP4 in memory, one fragment per access unit (live MSE viewers) ---
typedef struct sl_av_fragmenter sl_av_fragmenter;

// Opens libavformat's MP4 muxer writing to memory (movflags
// empty_moov+default_base_moof+frag_custom) for one H.264 stream of width x
// height whose SPS and PPS are `extradata` (Annex B), with `timescale` ticks a
// second, and writes the header: the init segment (ftyp and moov, the avcC
// made from the SPS and PPS), which sl_av_fragmenter_output then gives. NULL
// on failure, with err set.
sl_av_fragmenter *sl_av_fragmenter_open(int width, int height, const uint8_t *extradata, size_t extradata_size,
                                        int timescale, sl_av_error *err);

// Muxes one access unit (Annex B; stored length-prefixed) as one fragment
// (moof and mdat) lasting `duration` ticks, and flushes it; the fragment is
// then sl_av_fragmenter_output's. libavformat dates each fragment (tfdt) by
// the sum of the durations before it, so `pts` (the unit's time, also its
// dts) must be exactly that sum: 0, then the previous pts + its duration.
// 0 or the error.
int sl_av_fragmenter_write(sl_av_fragmenter *f, const uint8_t *data, size_t size, int64_t pts, int64_t duration,
                           int is_key, sl_av_error *err);

// The bytes the last open or write produced; owned by the fragmenter, valid
// until its next write or close.
void sl_av_fragmenter_output(sl_av_fragmenter *f, const uint8_t **data, size_t *size);

void sl_av_fragmenter_close(sl_av_fragmenter *f);

// --- reading what a video file holds (a clip cut short by a crash) ---

// What sl_av_file_probe found: every packet libavformat could read.
typedef struct sl_av_file_info {
    int64_t packets;     // whole packets readable (a cut-off last fragment is not)
    int64_t keyframes;
    double first_seconds; // presentation time of the first and last packet
    double last_seconds;
    double duration;     // last - first + the last packet's duration (seconds)
    int width, height;
} sl_av_file_info;

// Opens the file at `path`, reads every packet of its first video stream
// (no decoding) and fills *info. 0 or the error (not a video file, no video
// stream, no packet at all).
int sl_av_file_probe(const char *path, sl_av_file_info *info, sl_av_error *err);

// --- reader: a video file or a stream URL, demuxed and decoded to BGR24 ---
typedef struct sl_av_reader sl_av_reader;

// What sl_av_reader_open found in the input.
typedef struct sl_av_reader_info {
    double fps;          // the stream's average frame rate, else its base rate; 0 when unknown
    int64_t frame_count; // frames in the stream as the container says, else duration x fps; 0 when unknown
    int width, height;   // as the container says (a decoded picture may differ)
    char codec[32];      // libavcodec's name of the codec ("h264", "msmpeg4v3", "mjpeg")
} sl_av_reader_info;

// Opens `url` (a file path, or rtsp://, http://... any protocol libavformat
// has; RTSP over TCP), picks its best video stream and opens a decoder for
// its codec with `threads` threads (live: slice threads only, so no picture
// waits for the next; otherwise frame threads too). Every blocking step
// (connecting, probing, each read) gives up after `timeout_ms`, and network
// sockets are given the same I/O timeout. NULL on failure, with err set.
sl_av_reader *sl_av_reader_open(const char *url, int timeout_ms, int threads, int live, sl_av_reader_info *info,
                                sl_av_error *err);

// Reads and decodes until the next picture, converts it to BGR24 into *out
// (owned by the reader, valid until its next read, rewind or close; its size
// is the picture's, which may change from one picture to the next). *got is
// 0 at the end of the input, once the decoder has given every picture it
// held. A timeout is AVERROR(ETIMEDOUT). Returns 0 or the error code.
int sl_av_reader_read(sl_av_reader *r, int *got, sl_av_picture *out, sl_av_error *err);

// --- the source's own encoding, beside each picture ---

// The compressed frame a picture was decoded from; owned by the reader,
// valid until its next read, rewind or close.
typedef struct sl_av_unit {
    const uint8_t *data; // NULL when this picture has no unit to pass on (see `lost`, `sl_av_reader_reorders`)
    size_t size;
    int is_key;          // the container or parser called it a keyframe
    int lost;            // units before this one gave no picture (the decoder refused them, or too many waited)
} sl_av_unit;

// Asks the reader to keep, for every picture, the packet it was decoded
// from: H.264 in Annex B (libavcodec's h264_mp4toannexb filter turns an
// MP4's or Matroska's length-prefixed units into start codes, and puts the
// SPS and PPS before keyframes), MJPEG as the JPEG it is. Call it before
// the first read. Returns 1 for H.264, 2 for MJPEG, 0 for a codec whose
// packets are not kept (any other), or a negative error code.
int sl_av_reader_keep_units(sl_av_reader *r, sl_av_error *err);

// The stream's SPS and PPS in Annex B as the container gave them (H.264,
// after sl_av_reader_keep_units; size 0 when it gave none: they come in band).
void sl_av_reader_parameter_sets(sl_av_reader *r, const uint8_t **data, size_t *size);

// Whether the stream reorders pictures (B-frames): a picture then does not
// come from the packet just decoded, so no unit can be given beside it.
int sl_av_reader_reorders(sl_av_reader *r);

// Like sl_av_reader_read, and fills *unit with the packet the picture came
// from when the reader keeps units (else data is NULL).
int sl_av_reader_read_unit(sl_av_reader *r, int *got, sl_av_picture *out, sl_av_unit *unit, sl_av_error *err);

// MJPEG kept as units only: the next packet of the video stream as it is
// (one JPEG), with no decoding, into *unit (owned by the reader, valid until
// its next read, rewind or close); the caller decodes it. *got is 0 at the
// end of the input. Returns 0 or the error code (a timeout is
// AVERROR(ETIMEDOUT)); an error when the reader does not keep MJPEG units.
int sl_av_reader_read_packet(sl_av_reader *r, int *got, sl_av_unit *unit, sl_av_error *err);

// Like sl_av_reader_read_unit, but keeps the decoded picture as the decoder
// gave it (until the next read) and says its size: sl_av_reader_convert then
// writes it in BGR24 straight into the caller's buffer, with no copy between.
int sl_av_reader_read_unit_kept(sl_av_reader *r, int *got, int *width, int *height, sl_av_unit *unit,
                                sl_av_error *err);

// Converts the picture the last sl_av_reader_read_unit_kept gave into `dst`
// (width x height of that picture, BGR24, `stride` bytes a row).
int sl_av_reader_convert(sl_av_reader *r, uint8_t *dst, int stride, sl_av_error *err);

// A decoded picture held as the decoder gave it (YUV, a reference to the
// decoder's buffer, no copy), converted to BGR only when and at the size it
// is asked for. Immutable: any thread may convert it, each with its own
// scaler.
typedef struct sl_av_frame sl_av_frame;

// A new reference to the picture the last sl_av_reader_read_unit_kept kept
// (NULL: none is kept, or no memory). Free it with sl_av_frame_free.
sl_av_frame *sl_av_reader_ref_kept(sl_av_reader *r);
int sl_av_frame_width(const sl_av_frame *f);
int sl_av_frame_height(const sl_av_frame *f);
void sl_av_frame_free(sl_av_frame *f);

// libswscale's context for one conversion at a time (one thread), remade
// only when the picture's size or format or the output size changes.
typedef struct sl_av_scaler sl_av_scaler;
sl_av_scaler *sl_av_scaler_new(void);
void sl_av_scaler_free(sl_av_scaler *s);

// Writes `f` into `dst` in BGR24 at width x height (`stride` bytes a row):
// at the picture's own size through libswscale's unscaled converters, at a
// smaller one in the same pass with its area filter (each output pixel the
// mean of the source pixels it covers), so a detection-size copy of a 4K
// picture never passes through a full-size BGR one.
int sl_av_scaler_convert(sl_av_scaler *s, const sl_av_frame *f, uint8_t *dst, int stride, int width, int height,
                         sl_av_error *err);

// Seeks back to the start and empties the decoder, so the next read gives
// the first picture again. 0, or the error when the input cannot seek (then
// close it and open it again).
int sl_av_reader_rewind(sl_av_reader *r, sl_av_error *err);

void sl_av_reader_close(sl_av_reader *r);

#ifdef __cplusplus
}
#endif
#endif
