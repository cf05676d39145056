// H264Player: feeds the access units of /ws?video=h264 to a WebCodecs
// VideoDecoder and hands each decoded VideoFrame on with the JSON of its own seq.
//
// Each chunk's timestamp is the frame's seq, so the decoded VideoFrame says which
// frame it is; the JSON of every frame inside the decoder waits in a seq -> meta
// map until its picture comes out. The decoder starts on a keyframe, and after
// anything that breaks the reference chain (a decode error, a frame lost on the
// wire, a decode queue that grew too long) deltas are held back until the next
// keyframe, so a broken picture is never shown.
//
// Runs on the main thread; decoding happens on the browser's own threads. The
// WebCodecs classes are injected so the bookkeeping is unit-tested under node.

import { KeyframeGate, SeqMetaMap } from './video.js';

/**
 * Access units waiting in the decoder beyond this: drop deltas until the next keyframe.
 * About half a second at 30 fps (the server moves a viewer half a second behind to a
 * keyframe too); fewer trips at start-up, while a loaded machine still sets the decoder up.
 */
export const MAX_DECODE_QUEUE = 16;
/**
 * Frames whose JSON may wait for their picture at once (a bound, never reached normally): a joiner's
 * catch-up on a camera's own stream puts up to the server's kept units (750) in the decoder at once.
 */
export const MAX_FRAMES_IN_DECODER = 1024;

export class H264Player {
  /**
   * @param {{onFrame: (frame: {meta: object, bitmap: VideoFrame, format: string}) => void,
   *          onUnsupported?: (error: Error, codec: string) => void,
   *          VideoDecoder?: Function, EncodedVideoChunk?: Function, maxQueue?: number}} options
   */
  constructor({
    onFrame,
    onUnsupported = () => {},
    VideoDecoder = globalThis.VideoDecoder,
    EncodedVideoChunk = globalThis.EncodedVideoChunk,
    maxQueue = MAX_DECODE_QUEUE,
  }) {
    this.onFrame = onFrame;
    this.onUnsupported = onUnsupported;
    this.VideoDecoder = VideoDecoder;
    this.EncodedVideoChunk = EncodedVideoChunk;
    this.maxQueue = maxQueue;
    this.decoder = null;
    this.codec = null; // what the decoder is configured with
    this.unsupported = null; // the error when the browser cannot decode the stream's codec
    this.gate = new KeyframeGate();
    this.metas = new SeqMetaMap(MAX_FRAMES_IN_DECODER);
    this.lastFedSeq = -Infinity;
    this.catchUpThrough = -Infinity;
    this.lastOutputSeq = -Infinity; // frames up to this seq come in a burst (a joiner's catch-up): never dropped for the queue
    this.lastOutputSeq = -Infinity; // the newest picture the decoder gave
    this.stats = {
      chunks: 0, // access units offered
      keyframes: 0, // keyframes offered
      decoded: 0, // pictures handed on
      decodeErrors: 0,
      queueDrops: 0, // deltas dropped because the decode queue was full
      heldForKeyframe: 0, // deltas dropped while waiting for a keyframe
      orphans: 0, // pictures whose JSON was not known (never drawn)
      configures: 0,
    };
  }

  /** Why the player is waiting for a keyframe, or null when it is decoding. */
  get waitingFor() {
    return this.gate.waiting ? this.gate.reason : null;
  }

  /** Times the reference chain broke, by reason ({error, queue, lost, hidden}). */
  get keyframeWaits() {
    return { ...this.gate.waits };
  }

  /**
   * One paired frame: its JSON (with `video`) and its access unit.
   * @returns {boolean} whether it went to the decoder
   */
  push(meta, data) {
    const video = meta.video || {};
    const key = video.key === true;
    const seq = meta.seq;
    this.stats.chunks += 1;
    if (key) this.stats.keyframes += 1;
    if (this.unsupported) return false;
    if (!Number.isFinite(seq) || seq <= this.lastFedSeq) {
      // Timestamps must tell frames apart and come in order; a seq that does not
      // cannot be bound to its picture. Resynchronise on the next keyframe.
      this.gate.wait('lost');
      if (!key) this.stats.heldForKeyframe += 1;
      return false;
    }
    // A catch-up burst fills the queue on purpose; the limit holds again once its last picture is out.
    const catchingUp = seq <= this.catchUpThrough || this.lastOutputSeq < this.catchUpThrough;
    if (!key && !this.gate.waiting && this.decoder && this.decoder.decodeQueueSize >= this.maxQueue && !catchingUp) {
      this.stats.queueDrops += 1;
      this.gate.wait('queue');
      return false;
    }
    if (!this.gate.admit(key)) {
      this.stats.heldForKeyframe += 1;
      return false;
    }
    if (key) {
      const codec = typeof video.codec === 'string' && video.codec ? video.codec : this.codec;
      if (!codec) {
        // A keyframe that does not say its codec, before any that did: nothing to configure with.
        this.gate.wait('lost');
        this.stats.heldForKeyframe += 1;
        return false;
      }
      if (!this.decoder || this.decoder.state === 'closed' || codec !== this.codec) {
        if (!this.#configure(codec)) return false;
      }
    }
    if (!this.decoder) {
      this.gate.wait('lost');
      return false;
    }
    this.metas.set(seq, meta);
    this.lastFedSeq = seq;
    try {
      this.decoder.decode(new this.EncodedVideoChunk({ type: key ? 'key' : 'delta', timestamp: seq, data }));
    } catch (error) {
      this.metas.take(seq);
      this.#failed(this.decoder, error);
      return false;
    }
    return true;
  }

  /**
   * The frames up to `seq` come at once: the server started this stream at a camera's keyframe
   * seconds back (it cannot ask the camera for one), and sends what followed it so the decoder
   * catches up. They are decoded however long the queue grows, and shown as they come out.
   */
  catchUp(seq) {
    this.catchUpThrough = seq;
  }

  /** A frame was lost before the decoder (unpaired, wrong length, skipped): its successors need a keyframe. */
  gap(reason = 'lost') {
    this.gate.wait(reason);
  }

  /** A new stream (reconnect or mode switch): drop everything, wait for its first keyframe. */
  reset() {
    this.#closeDecoder();
    this.metas.clear();
    this.gate.restart();
    this.lastFedSeq = -Infinity;
    this.catchUpThrough = -Infinity;
  }

  close() {
    this.#closeDecoder();
    this.metas.clear();
  }

  #configure(codec) {
    this.#closeDecoder();
    let decoder;
    try {
      decoder = new this.VideoDecoder({
        output: (frame) => this.#output(decoder, frame),
        error: (error) => this.#failed(decoder, error),
      });
      // Annex B (no description), keyframe first; pictures out as soon as they decode.
      decoder.configure({ codec, optimizeForLatency: true, hardwareAcceleration: 'no-preference' });
    } catch (error) {
      // configure() throws only for a config it cannot even parse; treat it like an unsupported codec.
      this.#unsupported(error, codec);
      try {
        decoder?.close();
      } catch {}
      return false;
    }
    this.decoder = decoder;
    this.codec = codec;
    this.stats.configures += 1;
    return true;
  }

  #output(decoder, frame) {
    if (decoder !== this.decoder) {
      frame.close(); // from a decoder that was replaced: its frames belong to no current meta
      return;
    }
    const meta = this.metas.take(frame.timestamp);
    if (!meta) {
      this.stats.orphans += 1;
      frame.close();
      return;
    }
    this.stats.decoded += 1;
    this.lastOutputSeq = frame.timestamp;
    this.onFrame({ meta, bitmap: frame, format: 'h264' });
  }

  #failed(decoder, error) {
    if (decoder !== this.decoder) return;
    if (error?.name === 'NotSupportedError') {
      this.#unsupported(error, this.codec);
      this.#closeDecoder();
      return;
    }
    this.stats.decodeErrors += 1;
    this.#closeDecoder(); // a decoder that reported an error is closed; the next keyframe makes a new one
    this.metas.clear();
    this.gate.wait('error');
  }

  #unsupported(error, codec) {
    this.unsupported = error;
    this.onUnsupported(error, codec);
  }

  #closeDecoder() {
    const decoder = this.decoder;
    this.decoder = null;
    this.codec = null;
    if (decoder && decoder.state !== 'closed') {
      try {
        decoder.close();
      } catch {}
    }
  }
}
