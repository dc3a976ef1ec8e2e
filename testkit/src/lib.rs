//! Test support: a loopback mock provider server and fixture loaders.
