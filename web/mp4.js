// A small demuxer for the event clips' fragmented MP4 (GET /api/events/{id}/clip.mp4):
// libavformat's mov muxer with movflags=frag_keyframe+empty_moov+default_base_moof,
// one H.264 (avc1/avcC) video track. An ftyp, a moov with no samples and an mvex,
// then moof+mdat pairs, maybe an mfra at the end. A clip still being written, or cut
// by a crash, ends after its last complete fragment, possibly followed by part of
// another: that part is ignored.
//
// Pure functions over a Uint8Array, no DOM: unit-tested under node in
// Tests/web/clip.test.mjs and Tests/web/clipfile.test.mjs. Any thread.

/** What demuxClip throws for input that is not a clip it can read. */
export class ClipFormatError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ClipFormatError';
  }
}

// ISO/IEC 14496-12 flags.
const TFHD_BASE_DATA_OFFSET = 0x000001;
const TFHD_SAMPLE_DESCRIPTION_INDEX = 0x000002;
const TFHD_DEFAULT_DURATION = 0x000008;
const TFHD_DEFAULT_SIZE = 0x000010;
const TFHD_DEFAULT_FLAGS = 0x000020;
const TRUN_DATA_OFFSET = 0x000001;
const TRUN_FIRST_SAMPLE_FLAGS = 0x000004;
const TRUN_DURATION = 0x000100;
const TRUN_SIZE = 0x000200;
const TRUN_FLAGS = 0x000400;
const TRUN_COMPOSITION_OFFSET = 0x000800;
/** sample_is_non_sync_sample in a sample's flags. */
const SAMPLE_NON_SYNC = 0x00010000;
/** The fixed part of a VisualSampleEntry (avc1) before its child boxes. */
const VISUAL_SAMPLE_ENTRY_BYTES = 78;

function fourcc(bytes, at) {
  return String.fromCharCode(bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]);
}

function view(bytes) {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function u64(dv, at) {
  return dv.getUint32(at) * 2 ** 32 + dv.getUint32(at + 4);
}

/**
 * The boxes in bytes[start, end): [{type, start, headerSize, end, truncated}]. A box
 * whose size runs past `end` is listed with truncated: true and ends the list; so
 * does a header that does not fit or a size smaller than its header (then `bad`).
 */
export function parseBoxes(bytes, start = 0, end = bytes.length) {
  const dv = view(bytes);
  const boxes = [];
  let at = start;
  while (at < end) {
    if (end - at < 8) {
      boxes.push({ type: null, start: at, headerSize: 0, end, truncated: true });
      break;
    }
    let size = dv.getUint32(at);
    const type = fourcc(bytes, at + 4);
    let headerSize = 8;
    if (size === 1) {
      if (end - at < 16) {
        boxes.push({ type, start: at, headerSize: 0, end, truncated: true });
        break;
      }
      size = u64(dv, at + 8);
      headerSize = 16;
    } else if (size === 0) {
      size = end - at; // to the end of the enclosing space
    }
    if (size < headerSize) {
      boxes.push({ type, start: at, headerSize, end, truncated: true, bad: true });
      break;
    }
    if (at + size > end) {
      boxes.push({ type, start: at, headerSize, end, truncated: true });
      break;
    }
    boxes.push({ type, start: at, headerSize, end: at + size, truncated: false });
    at += size;
  }
  return boxes;
}

/** The complete child boxes of `box` (a container), skipping `skip` bytes of its own fields first. */
function children(bytes, box, skip = 0) {
  return parseBoxes(bytes, box.start + box.headerSize + skip, box.end).filter((b) => !b.truncated);
}

function child(bytes, box, type, skip = 0) {
  return children(bytes, box, skip).find((b) => b.type === type) || null;
}

/** A full box's version and flags, and where its fields start. */
function fullBox(bytes, box) {
  const at = box.start + box.headerSize;
  return { version: bytes[at], flags: (bytes[at + 1] << 16) | (bytes[at + 2] << 8) | bytes[at + 3], at: at + 4 };
}

/** "avc1.PPCCLL" from an SPS NAL unit (header byte, then profile_idc, constraint flags, level_idc). */
export function codecString(sps) {
  if (!sps || sps.length < 4) throw new ClipFormatError('the H.264 SPS is too short to name the codec');
  const hex = (v) => v.toString(16).padStart(2, '0');
  return `avc1.${hex(sps[1])}${hex(sps[2])}${hex(sps[3])}`;
}

/**
 * An avcC box's payload (AVCDecoderConfigurationRecord): its SPS and PPS NAL units, the
 * NAL length size of the samples, and the codec string (from the first SPS, else from
 * the record's own profile/compatibility/level bytes).
 */
export function parseAvcC(record) {
  if (record.length < 7 || record[0] !== 1) throw new ClipFormatError('the avcC box is not an AVC configuration record (version 1)');
  const lengthSize = (record[4] & 0x03) + 1;
  const sps = [];
  const pps = [];
  let at = 5;
  const take = (list, count) => {
    for (let i = 0; i < count; i += 1) {
      if (at + 2 > record.length) throw new ClipFormatError('the avcC box is cut short');
      const length = (record[at] << 8) | record[at + 1];
      if (at + 2 + length > record.length) throw new ClipFormatError('the avcC box is cut short');
      list.push(record.subarray(at + 2, at + 2 + length));
      at += 2 + length;
    }
  };
  take(sps, record[at++] & 0x1f);
  if (at < record.length) take(pps, record[at++]);
  const codec = sps.length ? codecString(sps[0]) : codecString(Uint8Array.of(0x67, record[1], record[2], record[3]));
  return { lengthSize, sps, pps, codec };
}

/** The first video track of a moov: id, timescale, size, avcC, and its trex defaults from mvex. */
function readTrack(bytes, moov) {
  const dv = view(bytes);
  const traks = children(bytes, moov).filter((b) => b.type === 'trak');
  let track = null;
  for (const trak of traks) {
    const mdia = child(bytes, trak, 'mdia');
    const hdlr = mdia && child(bytes, mdia, 'hdlr');
    if (!hdlr || fourcc(bytes, fullBox(bytes, hdlr).at + 4) !== 'vide') continue;
    const tkhd = child(bytes, trak, 'tkhd');
    const mdhd = child(bytes, mdia, 'mdhd');
    const minf = child(bytes, mdia, 'minf');
    const stbl = minf && child(bytes, minf, 'stbl');
    const stsd = stbl && child(bytes, stbl, 'stsd');
    if (!tkhd || !mdhd || !stsd) continue;
    const head = fullBox(bytes, tkhd);
    const id = dv.getUint32(head.at + (head.version === 1 ? 16 : 8));
    const time = fullBox(bytes, mdhd);
    const timescale = dv.getUint32(time.at + (time.version === 1 ? 16 : 8));
    // stsd: version/flags, entry_count, then the sample entries.
    const entry = parseBoxes(bytes, fullBox(bytes, stsd).at + 4, stsd.end)[0];
    if (!entry || entry.truncated) continue;
    if (entry.type !== 'avc1' && entry.type !== 'avc3') {
      throw new ClipFormatError(`the video track is ${entry.type}, not H.264 (avc1)`);
    }
    const fields = entry.start + entry.headerSize;
    const width = dv.getUint16(fields + 24);
    const height = dv.getUint16(fields + 26);
    const avcC = child(bytes, entry, 'avcC', VISUAL_SAMPLE_ENTRY_BYTES);
    if (!avcC) throw new ClipFormatError('the H.264 track has no avcC box');
    const description = bytes.slice(avcC.start + avcC.headerSize, avcC.end);
    track = { id, timescale, width, height, description, ...parseAvcC(description) };
    break;
  }
  if (!track) throw new ClipFormatError('the MP4 has no H.264 video track');
  if (!(track.timescale > 0)) throw new ClipFormatError('the video track has no timescale');
  const mvex = child(bytes, moov, 'mvex');
  if (!mvex) throw new ClipFormatError('not a fragmented MP4: the moov has no mvex box');
  track.defaults = { duration: 0, size: 0, flags: 0 };
  for (const trex of children(bytes, mvex).filter((b) => b.type === 'trex')) {
    const { at } = fullBox(bytes, trex);
    if (dv.getUint32(at) !== track.id) continue;
    track.defaults = { duration: dv.getUint32(at + 8), size: dv.getUint32(at + 12), flags: dv.getUint32(at + 16) };
  }
  return track;
}

/**
 * The samples of `track` in one moof (whose mdat follows it): [{dts, cto, duration, size,
 * flags, offset}] with times in the track's timescale; `nextDts` is where the track's
 * time stands after them. Returns null when the fragment is not complete in `bytes`.
 */
function readFragment(bytes, moof, track, nextDts) {
  const dv = view(bytes);
  const samples = [];
  let dts = nextDts;
  for (const traf of children(bytes, moof).filter((b) => b.type === 'traf')) {
    const tfhd = child(bytes, traf, 'tfhd');
    if (!tfhd) continue;
    const head = fullBox(bytes, tfhd);
    if (dv.getUint32(head.at) !== track.id) continue;
    let at = head.at + 4;
    // default-base-is-moof, or no base at all (one track): offsets count from the moof.
    let base = moof.start;
    if (head.flags & TFHD_BASE_DATA_OFFSET) {
      base = u64(dv, at);
      at += 8;
    }
    if (head.flags & TFHD_SAMPLE_DESCRIPTION_INDEX) at += 4;
    const defaults = { ...track.defaults };
    if (head.flags & TFHD_DEFAULT_DURATION) { defaults.duration = dv.getUint32(at); at += 4; }
    if (head.flags & TFHD_DEFAULT_SIZE) { defaults.size = dv.getUint32(at); at += 4; }
    if (head.flags & TFHD_DEFAULT_FLAGS) { defaults.flags = dv.getUint32(at); at += 4; }
    const tfdt = child(bytes, traf, 'tfdt');
    if (tfdt) {
      const time = fullBox(bytes, tfdt);
      dts = time.version === 1 ? u64(dv, time.at) : dv.getUint32(time.at);
    }
    let dataAt = base;
    for (const trun of children(bytes, traf).filter((b) => b.type === 'trun')) {
      const run = fullBox(bytes, trun);
      const count = dv.getUint32(run.at);
      let p = run.at + 4;
      if (run.flags & TRUN_DATA_OFFSET) {
        dataAt = base + dv.getInt32(p);
        p += 4;
      }
      let firstFlags = null;
      if (run.flags & TRUN_FIRST_SAMPLE_FLAGS) {
        firstFlags = dv.getUint32(p);
        p += 4;
      }
      const perSample = [TRUN_DURATION, TRUN_SIZE, TRUN_FLAGS, TRUN_COMPOSITION_OFFSET]
        .filter((f) => run.flags & f).length * 4;
      if (p + count * perSample > trun.end) return null; // a trun that does not hold its samples
      for (let i = 0; i < count; i += 1) {
        let duration = defaults.duration;
        let size = defaults.size;
        let flags = i === 0 && firstFlags !== null ? firstFlags : defaults.flags;
        let cto = 0;
        if (run.flags & TRUN_DURATION) { duration = dv.getUint32(p); p += 4; }
        if (run.flags & TRUN_SIZE) { size = dv.getUint32(p); p += 4; }
        if (run.flags & TRUN_FLAGS) { flags = dv.getUint32(p); p += 4; }
        if (run.flags & TRUN_COMPOSITION_OFFSET) { cto = run.version === 0 ? dv.getUint32(p) : dv.getInt32(p); p += 4; }
        if (dataAt + size > bytes.length) return null; // its data is not (all) there yet
        samples.push({ dts, cto, duration, size, flags, offset: dataAt });
        dataAt += size;
        dts += duration;
      }
    }
  }
  return { samples, nextDts: dts };
}

/**
 * Demuxes a clip. Returns {codec, description (the avcC payload, for VideoDecoder),
 * lengthSize, width, height, timescale, trackId, samples, duration, fragments,
 * truncated}; each sample is {index, timestamp and duration in seconds (media time),
 * isKey, data (a view into `input`), offset, size}. `truncated` says that bytes after
 * the last complete fragment were ignored. Throws ClipFormatError for anything else.
 */
export function demuxClip(input) {
  const bytes = input instanceof Uint8Array ? input : new Uint8Array(input);
  const top = parseBoxes(bytes);
  if (!top.length || !['ftyp', 'styp', 'moov'].includes(top[0].type)) {
    throw new ClipFormatError('not an MP4 file: it does not start with an ftyp or moov box');
  }
  const moov = top.find((b) => b.type === 'moov' && !b.truncated);
  if (!moov) throw new ClipFormatError('the MP4 has no complete moov box');
  const track = readTrack(bytes, moov);
  const samples = [];
  let fragments = 0;
  let truncated = false;
  let nextDts = 0;
  for (let i = 0; i < top.length; i += 1) {
    const box = top[i];
    if (box.truncated) {
      truncated = true; // a partial box at the end: a fragment being written, or cut
      break;
    }
    if (box.type !== 'moof') continue;
    const fragment = readFragment(bytes, box, track, nextDts);
    if (!fragment) {
      truncated = true;
      break;
    }
    fragments += 1;
    nextDts = fragment.nextDts;
    for (const s of fragment.samples) {
      samples.push({
        index: samples.length,
        timestamp: (s.dts + s.cto) / track.timescale,
        duration: s.duration / track.timescale,
        isKey: (s.flags & SAMPLE_NON_SYNC) === 0,
        data: bytes.subarray(s.offset, s.offset + s.size),
        offset: s.offset,
        size: s.size,
      });
    }
  }
  const last = samples[samples.length - 1];
  return {
    codec: track.codec,
    description: track.description,
    lengthSize: track.lengthSize,
    width: track.width,
    height: track.height,
    timescale: track.timescale,
    trackId: track.id,
    samples,
    duration: last ? last.timestamp + last.duration - samples[0].timestamp : 0,
    fragments,
    truncated,
  };
}
