//! The built-in scripted demo model (`--demo`): no key, no network.
