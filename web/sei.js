// Reads the Sightline SEI out of an H.264 access unit: every frame the server encodes
// carries, before its first slice, an SEI NAL unit (type 6) with a user_data_unregistered
// message (payload type 5) whose UUID is SIGHTLINE_SEI_UUID, followed by UTF-8 JSON
// {"seq", "capturedAt", "width", "height", "detections"} (see DESIGN.md). Here for the
// length-prefixed access units of an MP4 sample (the clips); emulation prevention bytes
// are removed before the message is read, and other messages and UUIDs are skipped.
//
// Pure functions, no DOM: unit-tested under node (Tests/web/clip.test.mjs). Any thread.

export const SIGHTLINE_SEI_UUID = '1c9042a8-8563-404c-b2a4-f8dd707b1bbd';
export const NAL_SEI = 6;
export const SEI_USER_DATA_UNREGISTERED = 5;
const UUID_BYTES = Uint8Array.from(SIGHTLINE_SEI_UUID.replace(/-/g, '').match(/../g), (h) => parseInt(h, 16));
const FIRST_VCL = 1;
const LAST_VCL = 5;
const decoder = new TextDecoder('utf-8');

/** The NAL unit type of a NAL unit (its first byte's low five bits). */
export function nalType(nal) {
  return nal[0] & 0x1f;
}

/**
 * The NAL units of a length-prefixed access unit (an MP4 sample), as views into it. A
 * length that runs past the end stops the list there (the rest is not a NAL unit).
 */
export function nalUnits(sample, lengthSize = 4) {
  const units = [];
  let at = 0;
  while (at + lengthSize <= sample.length) {
    let length = 0;
    for (let i = 0; i < lengthSize; i += 1) length = length * 256 + sample[at + i];
    at += lengthSize;
    if (length === 0) continue;
    if (at + length > sample.length) break;
    units.push(sample.subarray(at, at + length));
    at += length;
  }
  return units;
}

/** The RBSP of NAL unit bytes: every 0x03 that follows two zero bytes removed (H.264 7.4.1). */
export function removeEmulationPrevention(bytes) {
  const out = new Uint8Array(bytes.length);
  let n = 0;
  let zeros = 0;
  for (const b of bytes) {
    if (zeros >= 2 && b === 0x03) {
      zeros = 0;
      continue;
    }
    out[n++] = b;
    zeros = b === 0 ? zeros + 1 : 0;
  }
  return out.subarray(0, n);
}

/**
 * The messages of an SEI RBSP (the NAL unit without its header byte, emulation prevention
 * removed): [{type, payload}]. Type and size are each coded as 0xFF bytes plus a last byte.
 * Stops at the trailing bits, or at a message whose size runs past the end.
 */
export function seiMessages(rbsp) {
  const messages = [];
  let at = 0;
  const codedNumber = () => {
    let value = 0;
    while (at < rbsp.length && rbsp[at] === 0xff) {
      value += 255;
      at += 1;
    }
    if (at >= rbsp.length) return null;
    return value + rbsp[at++];
  };
  while (at < rbsp.length && !(rbsp[at] === 0x80 && at === rbsp.length - 1)) {
    const type = codedNumber();
    const size = codedNumber();
    if (type === null || size === null || at + size > rbsp.length) break;
    messages.push({ type, payload: rbsp.subarray(at, at + size) });
    at += size;
  }
  return messages;
}

function isSightlineUUID(payload) {
  if (payload.length < UUID_BYTES.length) return false;
  return UUID_BYTES.every((b, i) => payload[i] === b);
}

/** The JSON of a Sightline user_data_unregistered payload (UUID first), or null when it does not parse. */
function parsePayload(payload) {
  let end = payload.length;
  while (end > UUID_BYTES.length && payload[end - 1] === 0) end -= 1; // padding, if any
  try {
    const value = JSON.parse(decoder.decode(payload.subarray(UUID_BYTES.length, end)));
    return value && typeof value === 'object' ? value : null;
  } catch {
    return null;
  }
}

/**
 * The Sightline SEI JSON of one length-prefixed access unit, or null when it carries none
 * (only SEI NAL units before the first slice are looked at).
 */
export function readSightlineSEI(sample, lengthSize = 4) {
  for (const nal of nalUnits(sample, lengthSize)) {
    const type = nalType(nal);
    if (type >= FIRST_VCL && type <= LAST_VCL) break;
    if (type !== NAL_SEI) continue;
    for (const message of seiMessages(removeEmulationPrevention(nal.subarray(1)))) {
      if (message.type !== SEI_USER_DATA_UNREGISTERED || !isSightlineUUID(message.payload)) continue;
      const value = parsePayload(message.payload);
      if (value) return value;
    }
  }
  return null;
}
