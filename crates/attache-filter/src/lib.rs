//! proxy-wasm filter (placeholder until issue 3 lands).
