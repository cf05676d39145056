// See include/sightline_av.h for why this shim exists and what each call promises.
#include "sightline_av.h"

#include <libavcodec/avcodec.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sl_av_encoder {
    AVCodecContext *ctx;
    AVFrame *frame;               // YUV 4:2:0, reused frame after frame
    AVPacket *packet;             // the last packet handed out
    struct SwsContext *sws;       // made for the channel count of the input
    int sws_channels;
    int64_t next_pts;
};

// A decoded picture converted to BGR24 into a buffer kept from one picture
// to the next (made anew when the size changes); the decoder and the reader
// each have one.
typedef struct bgr_picture {
    struct SwsContext *sws;
    uint8_t *data;
    int width, height, stride;
} bgr_picture;

struct sl_av_decoder {
    AVCodecContext *ctx;
    AVFrame *frame;
    AVPacket *packet;
    bgr_picture bgr;              // the last picture
};

// libav logs to stderr at "info" by default (x264 prints its settings on
// every open): keep errors only, once per process.
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static void quiet_log(void) { av_log_set_level(AV_LOG_ERROR); }

static void clear(sl_av_error *err) {
    if (err) { err->code = 0; err->message[0] = 0; }
}

// Fills err with `what` and, for an AVERROR, libav's words for it; returns code.
static int fail(sl_av_error *err, int code, const char *what) {
    if (err) {
        err->code = code;
        if (code != -1) {
            char words[AV_ERROR_MAX_STRING_SIZE] = {0};
            av_strerror(code, words, sizeof words);
            snprintf(err->message, sizeof err->message, "%s: %s", what, words);
        } else {
            snprintf(err->message, sizeof err->message, "%s", what);
        }
    }
    return code;
}

// Converts `frame` with libswscale's `flags` into BGR24 at `dst`, width x
// height (`stride` bytes a row), through the context cached in *sws.
static int bgr_scale_to(struct SwsContext **sws, const AVFrame *frame, int width, int height, int flags, uint8_t *dst,
                        int stride, sl_av_error *err) {
    *sws = sws_getCachedContext(*sws, frame->width, frame->height, frame->format, width, height,
                                AV_PIX_FMT_BGR24, flags, NULL, NULL, NULL);
    if (!*sws) return fail(err, -1, "sws_getCachedContext failed for the picture's pixel format");
    uint8_t *planes[4] = {dst, NULL, NULL, NULL};
    int strides[4] = {stride, 0, 0, 0};
    sws_scale(*sws, (const uint8_t *const *)frame->data, frame->linesize, 0, frame->height, planes, strides);
    return 0;
}

// bgr_scale_to at the frame's own size.
static int bgr_scale(struct SwsContext **sws, const AVFrame *frame, int flags, uint8_t *dst, int stride,
                     sl_av_error *err) {
    return bgr_scale_to(sws, frame, frame->width, frame->height, flags, dst, stride, err);
}

// Converts `frame` with libswscale's `flags` into `bgr` and points `out` at it.
static int bgr_convert(bgr_picture *bgr, const AVFrame *frame, int flags, sl_av_picture *out, sl_av_error *err) {
    if (frame->width < 1 || frame->height < 1) return fail(err, -1, "the decoder gave a picture without a size");
    if (!bgr->data || bgr->width != frame->width || bgr->height != frame->height) {
        free(bgr->data);
        bgr->stride = frame->width * 3;
        bgr->data = malloc((size_t)bgr->stride * (size_t)frame->height);
        bgr->width = frame->width;
        bgr->height = frame->height;
        if (!bgr->data) return fail(err, AVERROR(ENOMEM), "picture");
    }
    int status = bgr_scale(&bgr->sws, frame, flags, bgr->data, bgr->stride, err);
    if (status < 0) return status;
    out->data = bgr->data;
    out->width = bgr->width;
    out->height = bgr->height;
    out->stride = bgr->stride;
    return 0;
}

static void bgr_free(bgr_picture *bgr) {
    sws_freeContext(bgr->sws);
    free(bgr->data);
}

static enum AVPixelFormat input_format(int channels) {
    switch (channels) {
    case 1: return AV_PIX_FMT_GRAY8;
    case 3: return AV_PIX_FMT_BGR24;
    case 4: return AV_PIX_FMT_BGR0;
    default: return AV_PIX_FMT_NONE;
    }
}

// --- encoder -----------------------------------------------------------------

sl_av_encoder *sl_av_encoder_open(int width, int height, int fps_num, int fps_den, const char *preset,
                                  const char *tune, int crf, int bitrate_kbps, int keyint, int threads,
                                  const char *x264_params, sl_av_error *err) {
    pthread_once(&log_once, quiet_log);
    clear(err);
    if (width < 2 || height < 2 || (width | height) & 1) {
        fail(err, -1, "width and height must be even and at least 2");
        return NULL;
    }
    if (fps_num <= 0 || fps_den <= 0 || keyint < 1 || threads < 1) {
        fail(err, -1, "fps, keyint and threads must be positive");
        return NULL;
    }
    const AVCodec *codec = avcodec_find_encoder_by_name("libx264");
    if (!codec) {
        fail(err, -1, "libavcodec has no libx264 encoder");
        return NULL;
    }
    sl_av_encoder *enc = calloc(1, sizeof *enc);
    if (!enc) { fail(err, AVERROR(ENOMEM), "encoder"); return NULL; }
    int status = 0;
    const char *step = "allocating the codec context";
    enc->ctx = avcodec_alloc_context3(codec);
    enc->frame = av_frame_alloc();
    enc->packet = av_packet_alloc();
    if (!enc->ctx || !enc->frame || !enc->packet) { status = AVERROR(ENOMEM); goto failed; }

    AVCodecContext *ctx = enc->ctx;
    ctx->width = width;
    ctx->height = height;
    ctx->pix_fmt = AV_PIX_FMT_YUV420P;
    ctx->time_base = (AVRational){fps_den, fps_num};
    ctx->framerate = (AVRational){fps_num, fps_den};
    ctx->gop_size = keyint;
    ctx->max_b_frames = 0;
    ctx->thread_count = threads;
    // What libswscale's BGR to YUV conversion makes, said in the VUI so
    // decoders (browsers included) convert back the same way.
    ctx->colorspace = AVCOL_SPC_SMPTE170M;
    ctx->color_primaries = AVCOL_PRI_SMPTE170M;
    ctx->color_trc = AVCOL_TRC_SMPTE170M;
    ctx->color_range = AVCOL_RANGE_MPEG;
    // No AV_CODEC_FLAG_GLOBAL_HEADER: the headers stay in the stream.
    if (bitrate_kbps > 0) {
        ctx->bit_rate = (int64_t)bitrate_kbps * 1000;
        ctx->rc_max_rate = ctx->bit_rate;
        ctx->rc_buffer_size = (int)ctx->bit_rate;
    }

    step = "setting the x264 options";
    if ((status = av_opt_set(ctx->priv_data, "preset", preset ? preset : "veryfast", 0)) < 0) goto failed;
    if (tune && *tune && (status = av_opt_set(ctx->priv_data, "tune", tune, 0)) < 0) goto failed;
    if ((status = av_opt_set(ctx->priv_data, "profile", "high", 0)) < 0) goto failed;
    if (bitrate_kbps <= 0 && (status = av_opt_set_double(ctx->priv_data, "crf", crf, 0)) < 0) goto failed;
    if ((status = av_opt_set_int(ctx->priv_data, "forced-idr", 1, 0)) < 0) goto failed;
    // SPS and PPS before every IDR, so a viewer can start at any keyframe.
    char params[1024];
    int written = snprintf(params, sizeof params, "repeat-headers=1%s%s", x264_params && *x264_params ? ":" : "",
                           x264_params ? x264_params : "");
    if (written < 0 || (size_t)written >= sizeof params) { status = AVERROR(EINVAL); goto failed; }
    if ((status = av_opt_set(ctx->priv_data, "x264-params", params, 0)) < 0) goto failed;

    step = "opening libx264";
    if ((status = avcodec_open2(ctx, codec, NULL)) < 0) goto failed;

    step = "allocating the picture";
    enc->frame->format = AV_PIX_FMT_YUV420P;
    enc->frame->width = width;
    enc->frame->height = height;
    if ((status = av_frame_get_buffer(enc->frame, 0)) < 0) goto failed;
    return enc;

failed:
    fail(err, status ? status : -1, step);
    sl_av_encoder_close(enc);
    return NULL;
}

int sl_av_encoder_encode(sl_av_encoder *enc, const uint8_t *pixels, int stride, int channels,
                         int force_keyframe, sl_av_packet *out, sl_av_error *err) {
    clear(err);
    memset(out, 0, sizeof *out);
    enum AVPixelFormat format = input_format(channels);
    if (format == AV_PIX_FMT_NONE) return fail(err, -1, "pixels must have 1, 3 or 4 channels");
    AVCodecContext *ctx = enc->ctx;
    if (!enc->sws || enc->sws_channels != channels) {
        sws_freeContext(enc->sws);
        // Accurate rounding keeps swscale off its fast BGR24 to YUV 4:2:0 path,
        // which takes each 2x2 block's chroma from one line instead of
        // averaging; full chroma input filters it from every pixel.
        enc->sws = sws_getContext(ctx->width, ctx->height, format, ctx->width, ctx->height, AV_PIX_FMT_YUV420P,
                                  SWS_BILINEAR | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INP, NULL, NULL, NULL);
        enc->sws_channels = channels;
        if (!enc->sws) return fail(err, -1, "sws_getContext failed for the input format");
    }
    int status = av_frame_make_writable(enc->frame);
    if (status < 0) return fail(err, status, "making the picture writable");
    const uint8_t *planes[4] = {pixels, NULL, NULL, NULL};
    int strides[4] = {stride, 0, 0, 0};
    sws_scale(enc->sws, planes, strides, 0, ctx->height, enc->frame->data, enc->frame->linesize);

    enc->frame->pts = enc->next_pts++;
    // With forced-idr, libx264 makes a picture typed I an IDR.
    enc->frame->pict_type = force_keyframe ? AV_PICTURE_TYPE_I : AV_PICTURE_TYPE_NONE;
    if ((status = avcodec_send_frame(ctx, enc->frame)) < 0) return fail(err, status, "avcodec_send_frame");
    av_packet_unref(enc->packet);
    status = avcodec_receive_packet(ctx, enc->packet);
    if (status == AVERROR(EAGAIN)) return fail(err, -1, "the encoder held the frame back (tune must include zerolatency)");
    if (status < 0) return fail(err, status, "avcodec_receive_packet");
    out->data = enc->packet->data;
    out->size = (size_t)enc->packet->size;
    out->is_key = (enc->packet->flags & AV_PKT_FLAG_KEY) != 0;
    return 0;
}

void sl_av_encoder_close(sl_av_encoder *enc) {
    if (!enc) return;
    avcodec_free_context(&enc->ctx);
    av_frame_free(&enc->frame);
    av_packet_free(&enc->packet);
    sws_freeContext(enc->sws);
    free(enc);
}

// --- decoder -----------------------------------------------------------------

sl_av_decoder *sl_av_decoder_open(sl_av_error *err) {
    pthread_once(&log_once, quiet_log);
    clear(err);
    const AVCodec *codec = avcodec_find_decoder(AV_CODEC_ID_H264);
    if (!codec) {
        fail(err, -1, "libavcodec has no H.264 decoder");
        return NULL;
    }
    sl_av_decoder *dec = calloc(1, sizeof *dec);
    if (!dec) { fail(err, AVERROR(ENOMEM), "decoder"); return NULL; }
    int status = 0;
    dec->ctx = avcodec_alloc_context3(codec);
    dec->frame = av_frame_alloc();
    dec->packet = av_packet_alloc();
    if (!dec->ctx || !dec->frame || !dec->packet) { status = AVERROR(ENOMEM); goto failed; }
    dec->ctx->thread_count = 1;
    dec->ctx->flags |= AV_CODEC_FLAG_LOW_DELAY;
    if ((status = avcodec_open2(dec->ctx, codec, NULL)) < 0) goto failed;
    return dec;

failed:
    fail(err, status ? status : -1, "opening the H.264 decoder");
    sl_av_decoder_close(dec);
    return NULL;
}


int sl_av_decoder_decode(sl_av_decoder *dec, const uint8_t *data, size_t size, int *got, sl_av_picture *out,
                         sl_av_error *err) {
    clear(err);
    *got = 0;
    memset(out, 0, sizeof *out);
    if (size > INT32_MAX - AV_INPUT_BUFFER_PADDING_SIZE) return fail(err, -1, "access unit too large");
    av_packet_unref(dec->packet);
    // A copy with the zeroed padding libavcodec's bitstream readers need.
    int status = av_new_packet(dec->packet, (int)size);
    if (status < 0) return fail(err, status, "av_new_packet");
    memcpy(dec->packet->data, data, size);
    if ((status = avcodec_send_packet(dec->ctx, dec->packet)) < 0) return fail(err, status, "avcodec_send_packet");
    status = avcodec_receive_frame(dec->ctx, dec->frame);
    if (status == AVERROR(EAGAIN)) return 0;
    if (status < 0) return fail(err, status, "avcodec_receive_frame");

    // Chroma interpolated to every pixel, as a browser's (or TurboJPEG's
    // fancy) upsampling does; swscale's default repeats it horizontally.
    status = bgr_convert(&dec->bgr, dec->frame, SWS_BILINEAR | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, out, err);
    av_frame_unref(dec->frame);
    if (status < 0) return status;
    *got = 1;
    return 0;
}

void sl_av_decoder_close(sl_av_decoder *dec) {
    if (!dec) return;
    avcodec_free_context(&dec->ctx);
    av_frame_free(&dec->frame);
    av_packet_free(&dec->packet);
    bgr_free(&dec->bgr);
    free(dec);
}

// --- muxer (publishing to a relay) -------------------------------------------

#include <libavcodec/bsf.h>
#include <libavformat/avformat.h>
#include <stdatomic.h>
#include <time.h>

// Says `stream` is H.264 of this size with this extradata (the SPS and PPS),
// copied with the padding libavformat reads past the end.
static int set_h264_stream(AVStream *stream, int width, int height, const uint8_t *extradata,
                           size_t extradata_size) {
    AVCodecParameters *par = stream->codecpar;
    par->codec_type = AVMEDIA_TYPE_VIDEO;
    par->codec_id = AV_CODEC_ID_H264;
    par->width = width;
    par->height = height;
    par->extradata = av_mallocz(extradata_size + AV_INPUT_BUFFER_PADDING_SIZE);
    if (!par->extradata) return AVERROR(ENOMEM);
    memcpy(par->extradata, extradata, extradata_size);
    par->extradata_size = (int)extradata_size;
    return 0;
}

struct sl_av_muxer {
    AVFormatContext *fmt;
    AVStream *stream;
    AVPacket *packet;
    int header_written;
    int timeout_ms;
    int64_t deadline_ns;          // the blocking call under way gives up after this
    atomic_int interrupted;       // set by sl_av_muxer_interrupt (any thread)
};

static int64_t monotonic_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

// libavformat calls this while it blocks (connecting, writing): nonzero stops it.
static int muxer_interrupt(void *opaque) {
    sl_av_muxer *m = opaque;
    return atomic_load(&m->interrupted) || monotonic_ns() > m->deadline_ns;
}

static void arm(sl_av_muxer *m) { m->deadline_ns = monotonic_ns() + (int64_t)m->timeout_ms * 1000000; }

sl_av_muxer *sl_av_muxer_open(const char *url, const char *format, int width, int height,
                              const uint8_t *extradata, size_t extradata_size, const char *muxer_options, int timeout_ms,
                              sl_av_error *err) {
    pthread_once(&log_once, quiet_log);
    clear(err);
    if (!url || !format || width < 2 || height < 2 || !extradata || extradata_size == 0 || timeout_ms < 1) {
        fail(err, -1, "url, format, size, SPS/PPS and timeout are required");
        return NULL;
    }
    sl_av_muxer *m = calloc(1, sizeof *m);
    if (!m) { fail(err, AVERROR(ENOMEM), "muxer"); return NULL; }
    m->timeout_ms = timeout_ms;
    atomic_init(&m->interrupted, 0);
    AVDictionary *options = NULL;
    int status = avformat_alloc_output_context2(&m->fmt, NULL, format, url);
    const char *step = "no libavformat muxer for this format";
    if (status < 0 || !m->fmt) goto failed;
    m->fmt->interrupt_callback.callback = muxer_interrupt;
    m->fmt->interrupt_callback.opaque = m;
    step = "making the video stream";
    m->stream = avformat_new_stream(m->fmt, NULL);
    m->packet = av_packet_alloc();
    if (!m->stream || !m->packet) { status = AVERROR(ENOMEM); goto failed; }
    if ((status = set_h264_stream(m->stream, width, height, extradata, extradata_size)) < 0) goto failed;
    m->stream->time_base = (AVRational){1, 1000};
    if (strcmp(format, "rtsp") == 0) av_dict_set(&options, "rtsp_transport", "tcp", 0);
    step = "reading the muxer options";
    if (muxer_options && *muxer_options && (status = av_dict_parse_string(&options, muxer_options, "=", ":", 0)) < 0)
        goto failed;
    arm(m);
    if (!(m->fmt->oformat->flags & AVFMT_NOFILE)) {
        step = "connecting";
        if ((status = avio_open2(&m->fmt->pb, url, AVIO_FLAG_WRITE, &m->fmt->interrupt_callback, &options)) < 0)
            goto failed;
    }
    step = "starting the stream (the relay refused it, or did not answer)";
    if ((status = avformat_write_header(m->fmt, &options)) < 0) goto failed;
    m->header_written = 1;
    av_dict_free(&options);
    return m;

failed:
    av_dict_free(&options);
    fail(err, status < 0 ? status : -1, step);
    sl_av_muxer_close(m);
    return NULL;
}

int sl_av_muxer_write(sl_av_muxer *m, const uint8_t *data, size_t size, int64_t pts_ms, int is_key, sl_av_error *err) {
    clear(err);
    if (size == 0 || size > INT32_MAX - AV_INPUT_BUFFER_PADDING_SIZE) return fail(err, -1, "access unit size");
    av_packet_unref(m->packet);
    int status = av_new_packet(m->packet, (int)size);
    if (status < 0) return fail(err, status, "av_new_packet");
    memcpy(m->packet->data, data, size);
    m->packet->stream_index = 0;
    m->packet->pts = m->packet->dts = av_rescale_q(pts_ms, (AVRational){1, 1000}, m->stream->time_base);
    if (is_key) m->packet->flags |= AV_PKT_FLAG_KEY;
    arm(m);
    if ((status = av_write_frame(m->fmt, m->packet)) < 0) return fail(err, status, "writing the stream");
    if (m->fmt->pb) avio_flush(m->fmt->pb);
    if (m->fmt->pb && m->fmt->pb->error < 0) return fail(err, m->fmt->pb->error, "writing the stream");
    return 0;
}

void sl_av_muxer_interrupt(sl_av_muxer *m) {
    if (m) atomic_store(&m->interrupted, 1);
}

int sl_av_muxer_finish(sl_av_muxer *m, sl_av_error *err) {
    clear(err);
    int status = 0;
    if (m && m->fmt && m->header_written && !atomic_load(&m->interrupted)) {
        arm(m);
        status = av_write_trailer(m->fmt);
        m->header_written = 0;
        if (status >= 0 && m->fmt->pb) {
            avio_flush(m->fmt->pb);
            if (m->fmt->pb->error < 0) status = m->fmt->pb->error;
        }
        if (status < 0) fail(err, status, "writing the end of the file");
    }
    sl_av_muxer_close(m);
    return status < 0 ? status : 0;
}

void sl_av_muxer_close(sl_av_muxer *m) {
    if (!m) return;
    if (m->fmt) {
        if (m->header_written && !atomic_load(&m->interrupted)) {
            arm(m);
            av_write_trailer(m->fmt);
        }
        if (m->fmt->pb && !(m->fmt->oformat->flags & AVFMT_NOFILE)) avio_closep(&m->fmt->pb);
        avformat_free_context(m->fmt);
    }
    av_packet_free(&m->packet);
    free(m);
}

// --- fragmenter (fragmented MP4 in memory for live MSE viewers) ----------

struct sl_av_fragmenter {
    AVFormatContext *fmt;
    AVStream *stream;
    AVPacket *packet;
    AVIOContext *io;
    uint8_t *io_buffer;           // libavformat's write buffer (owned by io once made)
    uint8_t *out;                 // what the last open or write produced
    size_t out_size, out_capacity;
};

// avio's write callback: appends to f->out.
static int fragmenter_collect(void *opaque, uint8_t *buf, int size) {
    sl_av_fragmenter *f = opaque;
    if (size <= 0) return 0;
    if (f->out_size + (size_t)size > f->out_capacity) {
        size_t capacity = f->out_capacity ? f->out_capacity : 65536;
        while (capacity < f->out_size + (size_t)size) capacity *= 2;
        uint8_t *grown = realloc(f->out, capacity);
        if (!grown) return AVERROR(ENOMEM);
        f->out = grown;
        f->out_capacity = capacity;
    }
    memcpy(f->out + f->out_size, buf, (size_t)size);
    f->out_size += (size_t)size;
    return size;
}

sl_av_fragmenter *sl_av_fragmenter_open(int width, int height, const uint8_t *extradata, size_t extradata_size,
                                        int timescale, sl_av_error *err) {
    pthread_once(&log_once, quiet_log);
    clear(err);
    if (width < 2 || height < 2 || !extradata || extradata_size == 0 || timescale < 1) {
        fail(err, -1, "size, SPS/PPS and timescale are required");
        return NULL;
    }
    sl_av_fragmenter *f = calloc(1, sizeof *f);
    if (!f) { fail(err, AVERROR(ENOMEM), "fragmenter"); return NULL; }
    AVDictionary *options = NULL;
    const char *step = "no libavformat mp4 muxer";
    int status = avformat_alloc_output_context2(&f->fmt, NULL, "mp4", NULL);
    if (status < 0 || !f->fmt) goto failed;
    step = "making the output";
    f->io_buffer = av_malloc(65536);
    f->stream = avformat_new_stream(f->fmt, NULL);
    f->packet = av_packet_alloc();
    if (!f->io_buffer || !f->stream || !f->packet) { status = AVERROR(ENOMEM); goto failed; }
    f->io = avio_alloc_context(f->io_buffer, 65536, 1, f, NULL, fragmenter_collect, NULL);
    if (!f->io) { status = AVERROR(ENOMEM); goto failed; }
    f->io_buffer = NULL;          // io's now
    f->io->seekable = 0;
    f->fmt->pb = f->io;
    f->fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
    if ((status = set_h264_stream(f->stream, width, height, extradata, extradata_size)) < 0) goto failed;
    f->stream->time_base = (AVRational){1, timescale};
    av_dict_set(&options, "movflags", "empty_moov+default_base_moof+frag_custom", 0);
    av_dict_set_int(&options, "video_track_timescale", timescale, 0);
    step = "writing the init segment";
    if ((status = avformat_write_header(f->fmt, &options)) < 0) goto failed;
    avio_flush(f->io);
    if (f->io->error < 0) { status = f->io->error; goto failed; }
    av_dict_free(&options);
    return f;

failed:
    av_dict_free(&options);
    fail(err, status < 0 ? status : -1, step);
    sl_av_fragmenter_close(f);
    return NULL;
}

int sl_av_fragmenter_write(sl_av_fragmenter *f, const uint8_t *data, size_t size, int64_t pts, int64_t duration,
                           int is_key, sl_av_error *err) {
    clear(err);
    if (size == 0 || size > INT32_MAX - AV_INPUT_BUFFER_PADDING_SIZE) return fail(err, -1, "access unit size");
    f->out_size = 0;
    av_packet_unref(f->packet);
    int status = av_new_packet(f->packet, (int)size);
    if (status < 0) return fail(err, status, "av_new_packet");
    memcpy(f->packet->data, data, size);
    f->packet->stream_index = 0;
    f->packet->pts = f->packet->dts = pts;
    f->packet->duration = duration > 0 ? duration : 1;
    f->packet->time_base = f->stream->time_base;
    if (is_key) f->packet->flags |= AV_PKT_FLAG_KEY;
    if ((status = av_write_frame(f->fmt, f->packet)) < 0) return fail(err, status, "muxing the access unit");
    // frag_custom: the fragment (this one unit) goes out when flushed.
    if ((status = av_write_frame(f->fmt, NULL)) < 0) return fail(err, status, "writing the fragment");
    avio_flush(f->io);
    if (f->io->error < 0) return fail(err, f->io->error, "writing the fragment");
    return 0;
}

void sl_av_fragmenter_output(sl_av_fragmenter *f, const uint8_t **data, size_t *size) {
    *data = f->out;
    *size = f->out_size;
}

void sl_av_fragmenter_close(sl_av_fragmenter *f) {
    if (!f) return;
    if (f->fmt) {
        f->fmt->pb = NULL;        // custom io: freed below, not by libavformat
        avformat_free_context(f->fmt);
    }
    if (f->io) {
        av_freep(&f->io->buffer);
        avio_context_free(&f->io);
    }
    av_freep(&f->io_buffer);
    av_packet_free(&f->packet);
    free(f->out);
    free(f);
}

// --- reading a video file ----------------------------------------------------

int sl_av_file_probe(const char *path, sl_av_file_info *info, sl_av_error *err) {
    pthread_once(&log_once, quiet_log);
    clear(err);
    memset(info, 0, sizeof *info);
    AVFormatContext *fmt = NULL;
    AVPacket *packet = NULL;
    int status = avformat_open_input(&fmt, path, NULL, NULL);
    const char *step = "opening the file";
    if (status < 0) goto done;
    step = "reading the file's streams";
    if ((status = avformat_find_stream_info(fmt, NULL)) < 0) goto done;
    int video = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    step = "the file has no video stream";
    if (video < 0) { status = video; goto done; }
    AVStream *stream = fmt->streams[video];
    info->width = stream->codecpar->width;
    info->height = stream->codecpar->height;
    packet = av_packet_alloc();
    step = "packet";
    if (!packet) { status = AVERROR(ENOMEM); goto done; }
    double timebase = av_q2d(stream->time_base);
    int64_t first = AV_NOPTS_VALUE, last = AV_NOPTS_VALUE, last_duration = 0;
    while (av_read_frame(fmt, packet) >= 0) {
        if (packet->stream_index == video && !(packet->flags & AV_PKT_FLAG_CORRUPT)) {
            int64_t t = packet->pts != AV_NOPTS_VALUE ? packet->pts : packet->dts;
            if (t != AV_NOPTS_VALUE) {
                if (first == AV_NOPTS_VALUE || t < first) first = t;
                if (last == AV_NOPTS_VALUE || t >= last) { last = t; last_duration = packet->duration; }
            }
            info->packets += 1;
            if (packet->flags & AV_PKT_FLAG_KEY) info->keyframes += 1;
        }
        av_packet_unref(packet);
    }
    step = "the file holds no video packet";
    if (info->packets == 0 || first == AV_NOPTS_VALUE) { status = -1; goto done; }
    info->first_seconds = first * timebase;
    info->last_seconds = last * timebase;
    info->duration = (last - first + last_duration) * timebase;
    status = 0;

done:
    av_packet_free(&packet);
    avformat_close_input(&fmt);
    if (status < 0) return fail(err, status, step);
    return 0;
}

// --- reader (video files and stream URLs) ------------------------------------

// Packets waiting for their pictures: a frame-threaded decoder holds one a thread.
#define UNITS_WAITING 32

struct sl_av_reader {
    AVFormatContext *fmt;
    AVCodecContext *ctx;
    AVFrame *frame;
    AVPacket *packet;
    int video;                    // the stream decoded
    int draining;                 // the input ended: the decoder gives what it holds
    int ended;                    // ... and has given it all
    bgr_picture bgr;              // the last picture
    int kept;                     // r->frame holds the last picture, not yet converted
    int timeout_ms;
    int64_t deadline_ns;          // the blocking call under way gives up after this
    // Kept units (sl_av_reader_keep_units): the packets sent to the decoder
    // whose pictures have not come out yet, oldest first.
    int keep;                     // 0 off, 1 H.264, 2 MJPEG
    AVBSFContext *bsf;            // H.264: to Annex B
    AVPacket *sent[UNITS_WAITING];
    int sent_count;
    AVPacket *unit;               // the unit handed out with the last picture
    int lost;                     // a unit gave no picture since the last one handed out
    int reorders;
};

static int reader_interrupt(void *opaque) {
    sl_av_reader *r = opaque;
    return monotonic_ns() > r->deadline_ns;
}

static void arm_reader(sl_av_reader *r) { r->deadline_ns = monotonic_ns() + (int64_t)r->timeout_ms * 1000000; }

// A libav error from a call the interrupt callback stopped says "Immediate exit
// requested"; say that it timed out.
static int reader_fail(sl_av_reader *r, sl_av_error *err, int code, const char *what) {
    if (monotonic_ns() > r->deadline_ns) {
        char words[160];
        snprintf(words, sizeof words, "%s: no answer in %d ms", what, r->timeout_ms);
        return fail(err, AVERROR(ETIMEDOUT), words);
    }
    return fail(err, code, what);
}

static int valid_rate(AVRational q) { return q.num > 0 && q.den > 0; }

sl_av_reader *sl_av_reader_open(const char *url, int timeout_ms, int threads, int live, sl_av_reader_info *info,
                                sl_av_error *err) {
    pthread_once(&log_once, quiet_log);
    clear(err);
    if (info) memset(info, 0, sizeof *info);
    if (!url || !*url || timeout_ms < 1 || threads < 1) {
        fail(err, -1, "url, timeout and threads are required");
        return NULL;
    }
    sl_av_reader *r = calloc(1, sizeof *r);
    if (!r) { fail(err, AVERROR(ENOMEM), "reader"); return NULL; }
    r->timeout_ms = timeout_ms;
    r->video = -1;
    AVDictionary *options = NULL;
    int status = AVERROR(ENOMEM);
    const char *step = "allocating the reader";
    r->fmt = avformat_alloc_context();
    r->frame = av_frame_alloc();
    r->packet = av_packet_alloc();
    if (!r->fmt || !r->frame || !r->packet) goto failed;
    r->fmt->interrupt_callback.callback = reader_interrupt;
    r->fmt->interrupt_callback.opaque = r;

    // Network inputs: RTSP over TCP (no lost UDP packets, one port), and each
    // socket read or write given up after the timeout (microseconds) even
    // between two calls of the interrupt callback. Unknown keys are ignored by
    // the protocols that do not have them.
    if (strstr(url, "://") && strncmp(url, "file:", 5) != 0) {
        char micros[32];
        snprintf(micros, sizeof micros, "%lld", (long long)timeout_ms * 1000);
        av_dict_set(&options, "rtsp_transport", "tcp", 0);
        av_dict_set(&options, "timeout", micros, 0);     // rtsp, tcp, http: socket I/O
        av_dict_set(&options, "rw_timeout", micros, 0);  // any protocol's reads
    }
    step = "opening the input";
    arm_reader(r);
    // avformat_open_input frees the context on failure.
    if ((status = avformat_open_input(&r->fmt, url, NULL, &options)) < 0) goto failed;
    step = "reading the input's streams";
    arm_reader(r);
    if ((status = avformat_find_stream_info(r->fmt, NULL)) < 0) goto failed;
    step = "the input has no video stream";
    const AVCodec *codec = NULL;
    if ((status = av_find_best_stream(r->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0)) < 0) goto failed;
    r->video = status;
    AVStream *stream = r->fmt->streams[r->video];
    // Only the video stream's packets are read.
    for (unsigned i = 0; i < r->fmt->nb_streams; i++)
        if ((int)i != r->video) r->fmt->streams[i]->discard = AVDISCARD_ALL;

    step = "opening the decoder";
    status = AVERROR(ENOMEM);
    if (!(r->ctx = avcodec_alloc_context3(codec))) goto failed;
    if ((status = avcodec_parameters_to_context(r->ctx, stream->codecpar)) < 0) goto failed;
    r->ctx->pkt_timebase = stream->time_base;
    r->ctx->thread_count = threads;
    // A frame-threaded decoder holds a picture back per thread: a stream's
    // pictures would come that much later.
    r->ctx->thread_type = live ? FF_THREAD_SLICE : FF_THREAD_FRAME | FF_THREAD_SLICE;
    if ((status = avcodec_open2(r->ctx, codec, NULL)) < 0) goto failed;
    av_dict_free(&options);

    if (info) {
        AVRational rate = valid_rate(stream->avg_frame_rate) ? stream->avg_frame_rate : stream->r_frame_rate;
        info->fps = valid_rate(rate) ? av_q2d(rate) : 0;
        if (stream->nb_frames > 0) {
            info->frame_count = stream->nb_frames;
        } else if (info->fps > 0 && stream->duration > 0 && stream->duration != AV_NOPTS_VALUE) {
            info->frame_count = llrint(stream->duration * av_q2d(stream->time_base) * info->fps);
        } else if (info->fps > 0 && r->fmt->duration > 0 && r->fmt->duration != AV_NOPTS_VALUE) {
            info->frame_count = llrint(r->fmt->duration / (double)AV_TIME_BASE * info->fps);
        }
        info->width = stream->codecpar->width;
        info->height = stream->codecpar->height;
        snprintf(info->codec, sizeof info->codec, "%s", avcodec_get_name(stream->codecpar->codec_id));
    }
    return r;

failed:
    av_dict_free(&options);
    reader_fail(r, err, status < 0 ? status : -1, step);
    sl_av_reader_close(r);
    return NULL;
}

int sl_av_reader_keep_units(sl_av_reader *r, sl_av_error *err) {
    clear(err);
    AVStream *stream = r->fmt->streams[r->video];
    enum AVCodecID id = stream->codecpar->codec_id;
    if (id == AV_CODEC_ID_MJPEG) {
        r->keep = 2;
    } else if (id == AV_CODEC_ID_H264) {
        const AVBitStreamFilter *filter = av_bsf_get_by_name("h264_mp4toannexb");
        if (!filter) return fail(err, -1, "libavcodec has no h264_mp4toannexb filter");
        int status = av_bsf_alloc(filter, &r->bsf);
        if (status < 0) return fail(err, status, "allocating the Annex B filter");
        if ((status = avcodec_parameters_copy(r->bsf->par_in, stream->codecpar)) < 0 ||
            (status = av_bsf_init(r->bsf)) < 0) {
            av_bsf_free(&r->bsf);
            return fail(err, status, "opening the Annex B filter");
        }
        r->keep = 1;
    } else {
        return 0;
    }
    if (!r->unit && !(r->unit = av_packet_alloc())) {
        av_bsf_free(&r->bsf);
        r->keep = 0;
        return fail(err, AVERROR(ENOMEM), "unit");
    }
    return r->keep;
}

void sl_av_reader_parameter_sets(sl_av_reader *r, const uint8_t **data, size_t *size) {
    *data = NULL;
    *size = 0;
    if (r->keep == 1 && r->bsf && r->bsf->par_out->extradata_size > 0) {
        *data = r->bsf->par_out->extradata;
        *size = (size_t)r->bsf->par_out->extradata_size;
    }
}

int sl_av_reader_reorders(sl_av_reader *r) { return r->reorders; }

static void drop_sent(sl_av_reader *r) {
    for (int i = 0; i < r->sent_count; i++) av_packet_free(&r->sent[i]);
    r->sent_count = 0;
}

// Keeps a reference to a packet sent to the decoder; the oldest goes (and
// counts as lost) when too many wait.
static int keep_sent(sl_av_reader *r, const AVPacket *packet) {
    if (r->sent_count == UNITS_WAITING) {
        av_packet_free(&r->sent[0]);
        memmove(r->sent, r->sent + 1, sizeof r->sent[0] * (UNITS_WAITING - 1));
        r->sent_count -= 1;
        r->lost = 1;
    }
    AVPacket *copy = av_packet_clone(packet);
    if (!copy) return AVERROR(ENOMEM);
    r->sent[r->sent_count++] = copy;
    return 0;
}

// The waiting packet the picture in r->frame came from, into r->unit (H.264
// through the Annex B filter); *unit empty when there is none. Packets
// before it gave no picture: lost. A picture that matches none (its packet
// came later: B-frames) marks the stream as reordering.
static int match_unit(sl_av_reader *r, sl_av_unit *unit, sl_av_error *err) {
    av_packet_unref(r->unit);
    if (r->ctx->has_b_frames > 0) r->reorders = 1;
    int64_t pts = r->frame->pts;
    int found = -1;
    for (int i = 0; i < r->sent_count; i++) {
        int64_t sent = r->sent[i]->pts;
        if (pts == AV_NOPTS_VALUE || sent == AV_NOPTS_VALUE || sent == pts) { found = i; break; }
    }
    if (found < 0) {
        if (r->sent_count > 0) r->reorders = 1;
        return 0;
    }
    if (found > 0) r->lost = 1;
    for (int i = 0; i < found; i++) av_packet_free(&r->sent[i]);
    AVPacket *packet = r->sent[found];
    memmove(r->sent, r->sent + found + 1, sizeof r->sent[0] * (size_t)(r->sent_count - found - 1));
    r->sent_count -= found + 1;
    if (r->reorders) {
        av_packet_free(&packet);
        return 0;
    }
    int status;
    if (r->keep == 1) {
        // h264_mp4toannexb gives one packet for each it takes.
        status = av_bsf_send_packet(r->bsf, packet);
        av_packet_free(&packet);
        if (status < 0) return fail(err, status, "converting a unit to Annex B");
        if ((status = av_bsf_receive_packet(r->bsf, r->unit)) < 0) {
            if (status == AVERROR(EAGAIN)) { r->lost = 1; return 0; }
            return fail(err, status, "converting a unit to Annex B");
        }
    } else {
        av_packet_move_ref(r->unit, packet);
        av_packet_free(&packet);
    }
    if (unit && r->unit->size > 0) {
        unit->data = r->unit->data;
        unit->size = (size_t)r->unit->size;
        unit->is_key = (r->unit->flags & AV_PKT_FLAG_KEY) != 0;
        unit->lost = r->lost;
        r->lost = 0;
    }
    return 0;
}

static int read_next(sl_av_reader *r, int *got, sl_av_picture *out, sl_av_unit *unit, sl_av_error *err);

int sl_av_reader_read(sl_av_reader *r, int *got, sl_av_picture *out, sl_av_error *err) {
    return read_next(r, got, out, NULL, err);
}

int sl_av_reader_read_unit(sl_av_reader *r, int *got, sl_av_picture *out, sl_av_unit *unit, sl_av_error *err) {
    return read_next(r, got, out, unit, err);
}

int sl_av_reader_read_unit_kept(sl_av_reader *r, int *got, int *width, int *height, sl_av_unit *unit,
                                sl_av_error *err) {
    int status = read_next(r, got, NULL, unit, err);
    *width = *got ? r->frame->width : 0;
    *height = *got ? r->frame->height : 0;
    if (status == 0 && *got && (*width < 1 || *height < 1)) {
        *got = 0;
        r->kept = 0;
        return fail(err, -1, "the decoder gave a picture without a size");
    }
    return status;
}

int sl_av_reader_convert(sl_av_reader *r, uint8_t *dst, int stride, sl_av_error *err) {
    clear(err);
    if (!r->kept) return fail(err, AVERROR(EINVAL), "no decoded picture is kept to convert");
    // The flags read_next uses (OpenCV's reader's).
    return bgr_scale(&r->bgr.sws, r->frame, SWS_BICUBIC, dst, stride, err);
}

struct sl_av_frame {
    AVFrame *frame;
};

sl_av_frame *sl_av_reader_ref_kept(sl_av_reader *r) {
    if (!r->kept) return NULL;
    sl_av_frame *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    if (!(f->frame = av_frame_clone(r->frame))) {
        free(f);
        return NULL;
    }
    return f;
}

int sl_av_frame_width(const sl_av_frame *f) { return f->frame->width; }
int sl_av_frame_height(const sl_av_frame *f) { return f->frame->height; }

void sl_av_frame_free(sl_av_frame *f) {
    if (!f) return;
    av_frame_free(&f->frame);
    free(f);
}

struct sl_av_scaler {
    struct SwsContext *sws;
};

sl_av_scaler *sl_av_scaler_new(void) { return calloc(1, sizeof(sl_av_scaler)); }

void sl_av_scaler_free(sl_av_scaler *s) {
    if (!s) return;
    sws_freeContext(s->sws);
    free(s);
}

int sl_av_scaler_convert(sl_av_scaler *s, const sl_av_frame *f, uint8_t *dst, int stride, int width, int height,
                         sl_av_error *err) {
    clear(err);
    const AVFrame *frame = f->frame;
    if (width < 1 || height < 1 || stride < width * 3) return fail(err, AVERROR(EINVAL), "output size");
    int same = width == frame->width && height == frame->height;
    // At the same size the flags OpenCV's reader used (libswscale then takes
    // its unscaled converters whatever the filter); smaller, the area filter.
    return bgr_scale_to(&s->sws, frame, width, height, same ? SWS_BICUBIC : SWS_AREA, dst, stride, err);
}

// Decodes the next picture into r->frame, kept there until the next read,
// and converts it into `out` unless out is NULL (sl_av_reader_convert then).
static int read_next(sl_av_reader *r, int *got, sl_av_picture *out, sl_av_unit *unit, sl_av_error *err) {
    clear(err);
    *got = 0;
    if (out) memset(out, 0, sizeof *out);
    r->kept = 0;
    if (unit) memset(unit, 0, sizeof *unit);
    if (r->ended) return 0;
    // Packets the decoder refuses as broken are skipped (a damaged stretch of
    // a file, a lost piece of a stream) unless nothing else comes.
    int refused = 0;
    arm_reader(r);
    for (;;) {
        int status = avcodec_receive_frame(r->ctx, r->frame);
        if (status == 0) {
            // The flags OpenCV's reader used; at the same size libswscale takes
            // its fast unscaled converters whatever the filter.
            status = out ? bgr_convert(&r->bgr, r->frame, SWS_BICUBIC, out, err) : 0;
            if (status == 0 && r->keep) status = match_unit(r, unit, err);
            if (out || status < 0) av_frame_unref(r->frame);
            if (status < 0) return status;
            r->kept = out == NULL;
            *got = 1;
            return 0;
        }
        if (status == AVERROR_EOF) {
            r->ended = 1;
            return 0;
        }
        if (status != AVERROR(EAGAIN)) {
            if (status != AVERROR_INVALIDDATA || ++refused > 100) return fail(err, status, "decoding");
            continue;
        }
        if (r->draining) {  // EAGAIN while draining: the decoder has nothing left
            r->ended = 1;
            return 0;
        }
        status = av_read_frame(r->fmt, r->packet);
        if (status == AVERROR_EOF || (status < 0 && r->fmt->pb && avio_feof(r->fmt->pb) && !r->fmt->pb->error &&
                                      !reader_interrupt(r))) {
            // The end of the input: the decoder still holds pictures (B-frames,
            // frame threads); an empty packet makes it give them.
            r->draining = 1;
            if ((status = avcodec_send_packet(r->ctx, NULL)) < 0 && status != AVERROR_EOF)
                return fail(err, status, "draining the decoder");
            continue;
        }
        if (status < 0) return reader_fail(r, err, status, "reading the input");
        if (r->packet->stream_index == r->video) {
            if (r->keep && (status = keep_sent(r, r->packet)) < 0) {
                av_packet_unref(r->packet);
                return fail(err, status, "keeping a unit");
            }
            status = avcodec_send_packet(r->ctx, r->packet);
            // EAGAIN cannot happen: every picture was received before this send.
            if (status < 0 && (status != AVERROR_INVALIDDATA || ++refused > 100)) {
                av_packet_unref(r->packet);
                return fail(err, status, "decoding");
            }
        }
        av_packet_unref(r->packet);
    }
}

int sl_av_reader_read_packet(sl_av_reader *r, int *got, sl_av_unit *unit, sl_av_error *err) {
    clear(err);
    *got = 0;
    memset(unit, 0, sizeof *unit);
    r->kept = 0;
    if (r->keep != 2) return fail(err, AVERROR(EINVAL), "the reader does not keep MJPEG units");
    av_packet_unref(r->unit);
    if (r->ended) return 0;
    arm_reader(r);
    for (;;) {
        int status = av_read_frame(r->fmt, r->unit);
        if (status == AVERROR_EOF || (status < 0 && r->fmt->pb && avio_feof(r->fmt->pb) && !r->fmt->pb->error &&
                                      !reader_interrupt(r))) {
            r->ended = 1;
            return 0;
        }
        if (status < 0) return reader_fail(r, err, status, "reading the input");
        if (r->unit->stream_index == r->video && r->unit->size > 0) break;
        av_packet_unref(r->unit);
    }
    unit->data = r->unit->data;
    unit->size = (size_t)r->unit->size;
    unit->is_key = 1;
    *got = 1;
    return 0;
}

int sl_av_reader_rewind(sl_av_reader *r, sl_av_error *err) {
    clear(err);
    r->kept = 0;
    AVStream *stream = r->fmt->streams[r->video];
    int64_t start = stream->start_time != AV_NOPTS_VALUE ? stream->start_time : 0;
    arm_reader(r);
    int status;
    // Formats whose timestamps may jump (MPEG-TS, MPEG-PS) seek by time only
    // roughly: back to the first byte instead, as ffplay does.
    const AVInputFormat *format = r->fmt->iformat;
    if ((format->flags & AVFMT_TS_DISCONT) && !(format->flags & AVFMT_NO_BYTE_SEEK) && strcmp(format->name, "ogg"))
        status = av_seek_frame(r->fmt, -1, 0, AVSEEK_FLAG_BYTE);
    else
        status = av_seek_frame(r->fmt, r->video, start, AVSEEK_FLAG_BACKWARD);
    if (status < 0) return reader_fail(r, err, status, "seeking to the start");
    avcodec_flush_buffers(r->ctx);
    drop_sent(r);
    if (r->bsf) av_bsf_flush(r->bsf);
    r->draining = 0;
    r->ended = 0;
    return 0;
}

void sl_av_reader_close(sl_av_reader *r) {
    if (!r) return;
    avformat_close_input(&r->fmt);  // also frees a context never opened
    avcodec_free_context(&r->ctx);
    av_frame_free(&r->frame);
    av_packet_free(&r->packet);
    drop_sent(r);
    av_packet_free(&r->unit);
    av_bsf_free(&r->bsf);
    bgr_free(&r->bgr);
    free(r);
}
