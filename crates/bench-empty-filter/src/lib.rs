//! Empty filter (being built).
