"""Attaché load benchmark: Envoy variants driven by hey, CPU per request from /proc."""
