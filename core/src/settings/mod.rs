//! Settings: defaults, user and project files, environment, flags (SPEC §1.2).
