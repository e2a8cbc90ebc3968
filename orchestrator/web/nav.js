// Navigation without reloads: `go` pushes a path and asks the router (set
// by app.js) to draw it; a page may register what to stop when it is left.

let router = () => {};
let leaving = () => {};

/// The function that draws the current path.
export function setRouter(fn) {
  router = fn;
}

/// Shows `path`, keeping it in the history.
export function go(path) {
  history.pushState({}, '', path);
  router();
}

/// Draws the current path again (after signing in or out).
export function redraw() {
  router();
}

/// What to stop (a live event stream) when the current page is left.
export function onLeave(fn) {
  leaving = fn;
}

/// Stops what the current page registered.
export function leave() {
  leaving();
  leaving = () => {};
}
