//! Giving back what a round freed. A round's transient structures (the
//! assembled input, the resolution, the status values) are freed when it
//! ends, but glibc's malloc keeps the freed pages in its arenas, so the
//! process's RSS stays at the round's peak: at 10,000 routes about 100 MiB
//! more than what is in use (bench/findings.md, "The incremental
//! reconcile"). `malloc_trim` returns them to the system. The `attache` binary
//! allocates through mimalloc, which returns its own freed pages after a short
//! delay; this still trims what glibc holds (C code, and embedders of this
//! crate that keep glibc, such as the examples).

// malloc_trim is a C function: the controller's one `unsafe` (lib.rs
// denies it elsewhere).
#![allow(unsafe_code)]

/// Returns the heap's free pages to the system (glibc only; elsewhere the
/// allocator decides, and this does nothing).
pub fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases pages that hold no allocation; it
    // touches no memory the program uses, and may be called at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
