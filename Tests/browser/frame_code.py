"""A test video whose every frame says which frame it is, twice: once in pixels (a frame code, a
row of large black and white blocks) and once through what the server detects in it (a template
patch whose position depends on the frame). A page that draws frame N's boxes on frame N's picture
reads back, from its own canvas, the code that the boxes' position implies; boxes drawn on a
neighbouring frame give another code.

Frame k (of a loop of PERIOD frames, 640x480):
- the top CODE_HEIGHT pixels: CODE_BLOCKS blocks of 80 px: a white start block, the six bits of
  k mod 64 (most significant first, white = 1), and an even-parity block;
- the patch (patch_image()) centred on the k-th point of a snake through an 8x8 grid below the
  code strip, so consecutive frames move it one grid step (80 px across or 47 px down).

Used by Tests/browser/test_h264.py and scripts/make_frame_code_video.py.
"""
import numpy as np

WIDTH, HEIGHT = 640, 480
PERIOD = 64
CODE_BITS = 6
CODE_BLOCKS = 8
CODE_HEIGHT = 64
BLOCK_WIDTH = WIDTH // CODE_BLOCKS
BACKGROUND = 128
GRID = 8
PATCH_SIZE = 72
PATCH_CELLS = 4
TOP = CODE_HEIGHT + 16  # the patch stays below the code strip
# Patch centres: columns 80 px apart, rows spread over the height left.
COLUMN_X = [BLOCK_WIDTH // 2 + BLOCK_WIDTH * c for c in range(GRID)]
ROW_Y = [round(TOP + PATCH_SIZE / 2 + r * (HEIGHT - TOP - PATCH_SIZE) / (GRID - 1)) for r in range(GRID)]
# A box whose centre is further than this from every patch centre identifies no frame.
MAX_CENTRE_ERROR_PX = 20


def patch_image():
    """The template: a 4x4 grid of black and white cells (fixed, not symmetric) with a grey frame,
    as HxWx3 uint8."""
    rng = np.random.default_rng(25)
    cells = rng.integers(0, 2, size=(PATCH_CELLS, PATCH_CELLS))
    cells[0, 0], cells[0, 1], cells[1, 0] = 1, 0, 0  # never a uniform corner
    cell = PATCH_SIZE // PATCH_CELLS
    patch = np.kron(cells * 255, np.ones((cell, cell))).astype(np.uint8)
    patch[:3, :] = patch[-3:, :] = patch[:, :3] = patch[:, -3:] = 64
    return np.repeat(patch[:, :, None], 3, axis=2)


def patch_centre(index):
    """Centre (x, y) in pixels of the patch in frame `index` (a snake through the grid)."""
    k = index % PERIOD
    row, col = divmod(k, GRID)
    if row % 2:
        col = GRID - 1 - col
    return COLUMN_X[col], ROW_Y[row]


def code_bits(index):
    """The blocks of frame `index`, left to right, True = white."""
    k = index % PERIOD
    bits = [bool((k >> (CODE_BITS - 1 - i)) & 1) for i in range(CODE_BITS)]
    parity = sum(bits) % 2 == 1
    return [True, *bits, parity]


def make_frame(index):
    """Frame `index` as HxWx3 uint8 RGB."""
    frame = np.full((HEIGHT, WIDTH, 3), BACKGROUND, np.uint8)
    for i, white in enumerate(code_bits(index)):
        frame[:CODE_HEIGHT, i * BLOCK_WIDTH:(i + 1) * BLOCK_WIDTH] = 255 if white else 0
    patch = patch_image()
    cx, cy = patch_centre(index)
    x0, y0 = cx - PATCH_SIZE // 2, cy - PATCH_SIZE // 2
    frame[y0:y0 + PATCH_SIZE, x0:x0 + PATCH_SIZE] = patch
    return frame


def probe_points():
    """Where to read the code: the centre of each block, normalized to the frame ([x, y] pairs)."""
    return [[(i + 0.5) / CODE_BLOCKS, (CODE_HEIGHT / 2) / HEIGHT] for i in range(CODE_BLOCKS)]


def decode_code(lumas, threshold=128):
    """The frame index mod PERIOD from the luma read at probe_points(), or None when the start
    block or the parity is wrong (not a readable code)."""
    if lumas is None or len(lumas) != CODE_BLOCKS:
        return None
    bits = [value >= threshold for value in lumas]
    if not bits[0] or sum(bits[1:CODE_BITS + 1]) % 2 != int(bits[-1]):
        return None
    value = 0
    for bit in bits[1:CODE_BITS + 1]:
        value = (value << 1) | int(bit)
    return value


def index_from_box(box, width=WIDTH, height=HEIGHT):
    """The frame index mod PERIOD whose patch centre is nearest to a normalized box's centre, or
    None when no centre is within MAX_CENTRE_ERROR_PX."""
    cx = (box["x"] + box["w"] / 2) * width
    cy = (box["y"] + box["h"] / 2) * height
    best, best_distance = None, None
    for k in range(PERIOD):
        px, py = patch_centre(k)
        distance = ((px - cx) ** 2 + (py - cy) ** 2) ** 0.5
        if best_distance is None or distance < best_distance:
            best, best_distance = k, distance
    return best if best_distance <= MAX_CENTRE_ERROR_PX else None


def write_video(path, frames=PERIOD * 3, fps=30):
    """Write the video (H.264 at a high quality, or MJPEG if libx264 is missing) with PyAV."""
    import av
    with av.open(str(path), "w") as container:
        try:
            stream = container.add_stream("libx264", rate=fps)
            stream.options = {"crf": "12", "preset": "veryfast"}
        except Exception:
            stream = container.add_stream("mjpeg", rate=fps)
        stream.width, stream.height = WIDTH, HEIGHT
        stream.pix_fmt = "yuv420p" if stream.codec_context.name != "mjpeg" else "yuvj420p"
        for index in range(frames):
            frame = av.VideoFrame.from_ndarray(make_frame(index), format="rgb24")
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def write_patch(path):
    from PIL import Image
    Image.fromarray(patch_image()).save(path)
