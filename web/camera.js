// Which camera the page shows, and that camera's paths.
//
// A server may run several cameras. The page shows one with all its tools: the
// one named by ?camera=NAME in the page's URL, else the first (the camera of the
// unprefixed routes). A camera's own routes live under /cam/NAME/ (ws,
// stream.mjpg, snapshot.jpg, metrics) and /api/cameras/NAME/ (every /api/X of a
// camera becomes /api/cameras/NAME/X); the server-wide ones (/api/session,
// /api/cameras) have no camera.
//
// No DOM: safe to import under Node (where `location` is undefined, so there is
// no chosen camera and every path stays as it is). Unit-tested in
// Tests/web/camera.test.mjs.

/** The page URL's query parameter naming the camera. */
export const CAMERA_PARAM = 'camera';
/** GET: every camera of the server (server-wide). */
export const CAMERAS_PATH = '/api/cameras';
/** Paths of a camera's own stream routes (not under /api). */
const STREAM_PATHS = Object.freeze(['/ws', '/stream.mjpg', '/snapshot.jpg', '/metrics']);
/** API paths that belong to the server, not to a camera. */
const SERVER_WIDE_API = Object.freeze(['/api/session', CAMERAS_PATH]);

/**
 * The camera named in a query string, or null.
 * @param {string} search e.g. location.search ("?camera=yard&video=jpeg")
 * @returns {string|null} the name as given ('' and a missing parameter are no camera)
 */
export function cameraFromSearch(search) {
  const name = new URLSearchParams(search || '').get(CAMERA_PARAM);
  return name ? name : null;
}

/** True when `path` is `prefix` itself or lies under it ("/api/session", "/api/session/x", "/api/session?x"). */
function isUnder(path, prefix) {
  return path === prefix || path.startsWith(`${prefix}/`);
}

/**
 * A path of the server mapped to camera `name`'s own route: /ws, /stream.mjpg,
 * /snapshot.jpg, /metrics -> /cam/NAME/...; /api/X -> /api/cameras/NAME/X.
 * Server-wide paths (/api/session, /api/cameras...), paths already of a camera
 * (/cam/...) and anything else (/, static files) stay as they are. A query or a
 * fragment is kept. The name is percent-encoded as one path segment.
 * @param {string} path an absolute path such as "/api/state" or "/ws?video=h264"
 * @param {string|null|undefined} name the camera, or null for the unprefixed routes
 * @returns {string}
 */
export function pathForCamera(path, name) {
  if (!name || typeof path !== 'string') return path;
  const cut = path.search(/[?#]/);
  const route = cut < 0 ? path : path.slice(0, cut);
  const rest = cut < 0 ? '' : path.slice(cut);
  const segment = encodeURIComponent(name);
  if (STREAM_PATHS.includes(route)) return `/cam/${segment}${route}${rest}`;
  if (!route.startsWith('/api/') || SERVER_WIDE_API.some((prefix) => isUnder(route, prefix))) return path;
  return `/api/cameras/${segment}/${route.slice('/api/'.length)}${rest}`;
}

/** The camera this page shows (?camera=NAME), or null for the server's first; always null under Node. */
export const CURRENT_CAMERA = cameraFromSearch(globalThis.location?.search ?? '');

/**
 * A path for the camera this page shows (unchanged without ?camera=).
 * @param {string} path e.g. "/api/templates"
 * @returns {string}
 */
export function cameraPath(path) {
  return pathForCamera(path, CURRENT_CAMERA);
}

/**
 * The page's address for camera `name` with all its tools: the current query
 * with camera=NAME (other parameters, such as video=, are kept).
 * @param {string} name
 * @param {string} [search] the current query string (location.search)
 * @returns {string} e.g. "?camera=yard"
 */
export function cameraPageHref(name, search = globalThis.location?.search ?? '') {
  const params = new URLSearchParams(search || '');
  params.set(CAMERA_PARAM, name);
  return `?${params}`;
}
