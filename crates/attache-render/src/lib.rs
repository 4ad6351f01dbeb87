//! Data-plane renderers (being built).
