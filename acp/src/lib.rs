//! corvid's Agent Client Protocol server.
