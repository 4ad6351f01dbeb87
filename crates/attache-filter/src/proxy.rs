//! The proxy-wasm adapter: the module's exports, which hand every callback
//! to [`Dispatcher`], and a [`Host`] over the host calls in [`crate::abi`].
//!
//! **Why not the Rust SDK.** The ABI makes every callback optional ("called
//! only if exposed by the Wasm module", proxy-wasm/spec
//! abi-versions/v0.2.1/README.md), and proxy-wasm-cpp-host enters the VM
//! only for the callbacks a module exports: `WasmBase::getFunctions` (src/wasm.cc) looks
//! each `proxy_on_*` up by name, and `ContextBase::onRequestBody`, `onLog`,
//! `onDone` and the others (src/context.cc) return at once when it is
//! absent. The SDK (`proxy-wasm` 0.2.5, src/dispatcher.rs) exports all of
//! them, so Envoy entered the VM on every body chunk, for `proxy_on_log` and
//! for `proxy_on_done`, none of which the filter needs. These exports are
//! the whole list (tests/e2e/wasm_exports.rs checks the built .wasm against
//! it, with `memory` and WASI's `_initialize`):
//! - `proxy_abi_version_0_2_1`: the ABI the host speaks to us in;
//! - `proxy_on_memory_allocate`: the host refuses a module without `malloc`
//!   or this (`WasmBase::getFunctions`), and copies values in through it;
//! - `proxy_on_context_create` / `proxy_on_delete`: which root context a
//!   stream belongs to (several plugins can share one VM), and when its
//!   state is freed (`crate::dispatch`);
//! - `proxy_on_configure`: the configuration; without it the host would
//!   take any configuration as accepted (`ContextBase::onConfigure`);
//! - `proxy_on_tick`: publishes the VM's counts and re-reads the log level;
//! - `proxy_on_request_headers` / `proxy_on_response_headers`: the work.
//!
//! - `_initialize`: runs the module's static constructors once, before any
//!   callback (what the SDK's `main!` did).
//!
//! Not exported: `proxy_on_vm_start` (the filter has no VM configuration;
//! the host then takes the start as successful, `ContextBase::onStart`) and
//! `proxy_on_done` (the host then takes every context as done and deletes a
//! root context at once, `WasmBase::startShutdown`; the VM's last counts
//! are published from `proxy_on_delete` instead).
//!
//! Counters are recorded in the VM and published from the tick (see
//! [`crate::tally`]); Envoy's log level is cached the same way.

// Exports by symbol name (`#[no_mangle]`) and raw memory from the host:
// with `abi`, the only `unsafe` of the filter (lib.rs denies the rest).
#![allow(unsafe_code)]

use std::cell::{Cell, RefCell};

use crate::abi;
use crate::dispatch::Dispatcher;
use crate::host::{Counter, Gauge, HeaderMap, Host, LogLevel};
use crate::tally::Tally;

/// How often a root context publishes the VM's counts and re-reads Envoy's
/// log level, in milliseconds. Stats lag by at most this much.
const TICK_MS: u32 = 1_000;

/// `FilterHeadersStatus::Continue`.
const CONTINUE: u32 = 0;

/// Metric ids, one per [`Counter`]; `None` where the host refused one.
type MetricIds = [Option<u32>; Counter::ALL.len()];
/// The same, one per [`Gauge`].
type GaugeIds = [Option<u32>; Gauge::ALL.len()];

/// What every context of this VM shares: Envoy's metrics live in the VM's
/// stats scope, so one set of ids and one tally serve all root contexts,
/// and whichever root ticks next publishes counts from streams of any.
struct VmState {
    metrics: MetricIds,
    gauges: GaugeIds,
    tally: Tally,
    /// Envoy's log level as last read; `None` until read. Cached so that
    /// the request path asks no host call before deciding not to log.
    level: Cell<Option<u32>>,
}

impl VmState {
    fn new() -> Self {
        let mut metrics: MetricIds = [None; Counter::ALL.len()];
        for counter in Counter::ALL {
            if let Some(slot) = metrics.get_mut(counter.index()) {
                *slot = abi::define_counter(counter.metric_name());
            }
        }
        let mut gauges: GaugeIds = [None; Gauge::ALL.len()];
        for gauge in Gauge::ALL {
            if let Some(slot) = gauges.get_mut(gauge.index()) {
                *slot = abi::define_gauge(gauge.metric_name());
            }
        }
        VmState {
            metrics,
            gauges,
            tally: Tally::default(),
            level: Cell::new(None),
        }
    }

    fn refresh_level(&self) {
        self.level.set(abi::log_level());
    }

    fn flush(&self) {
        self.tally.flush(&mut ProxyHost { vm: self });
    }
}

thread_local! {
    static VM: VmState = VmState::new();
    static CONTEXTS: RefCell<Dispatcher> = RefCell::new(Dispatcher::new());
}

/// Runs `f` with the VM's state and its context table. The host never
/// re-enters a callback while one runs (host calls do not call back into
/// the module except for `proxy_on_memory_allocate`, which touches
/// neither); should it ever, the inner callback does nothing rather than
/// trap on a second borrow.
fn with_vm<R>(fallback: R, f: impl FnOnce(&VmState, &mut Dispatcher) -> R) -> R {
    VM.with(|vm| {
        CONTEXTS.with(|contexts| match contexts.try_borrow_mut() {
            Ok(mut contexts) => f(vm, &mut contexts),
            Err(_) => fallback,
        })
    })
}

struct ProxyHost<'a> {
    vm: &'a VmState,
}

fn map_type(map: HeaderMap) -> u32 {
    match map {
        HeaderMap::Request => abi::REQUEST_HEADERS,
        HeaderMap::Response => abi::RESPONSE_HEADERS,
    }
}

/// proxy-wasm's log levels: trace 0 to critical 5.
fn wasm_level(level: LogLevel) -> u32 {
    match level {
        LogLevel::Trace => 0,
        LogLevel::Debug => 1,
        LogLevel::Info => 2,
        LogLevel::Warn => 3,
        LogLevel::Error => 4,
    }
}

impl Host for ProxyHost<'_> {
    fn property(&self, path: &[&str]) -> Option<Vec<u8>> {
        abi::property(path)
    }

    fn set_property(&mut self, path: &[&str], value: &[u8]) {
        abi::set_property(path, value)
    }

    fn header(&self, map: HeaderMap, name: &str) -> Option<Vec<u8>> {
        // As bytes: a client's non-UTF-8 value must not trap.
        abi::header(map_type(map), name)
    }

    fn set_header(&mut self, map: HeaderMap, name: &str, value: Option<&str>) {
        // A refused write leaves the request as it was; there is nobody to
        // report it to on the request path beyond Envoy's own logs.
        match value {
            Some(value) => abi::replace_header(map_type(map), name, value),
            None => abi::remove_header(map_type(map), name),
        }
    }

    fn add_header(&mut self, map: HeaderMap, name: &str, value: &str) {
        abi::add_header(map_type(map), name, value);
    }

    fn log_enabled(&self, level: LogLevel) -> bool {
        // The cached level (refreshed on configure and every tick), so a
        // level change takes effect within one tick.
        self.vm
            .level
            .get()
            .is_some_and(|current| current <= wasm_level(level))
    }

    fn log(&self, level: LogLevel, message: &str) {
        abi::log(wasm_level(level), message);
    }

    fn increment(&mut self, counter: Counter) {
        self.vm.tally.record(counter);
    }

    fn set_gauge(&mut self, gauge: Gauge, value: u64) {
        if let Some(Some(id)) = self.vm.gauges.get(gauge.index()) {
            abi::record_metric(*id, value);
        }
    }

    fn clock_nanos(&self) -> Option<u64> {
        abi::now_nanos()
    }

    fn memory_bytes(&self) -> Option<u64> {
        // Pages of 64 KiB (the Wasm spec's page size); not a host call.
        let pages = core::arch::wasm32::memory_size(0);
        u64::try_from(pages).ok()?.checked_mul(65_536)
    }

    fn add_to_metric(&mut self, counter: Counter, delta: u64) {
        if let Some(Some(id)) = self.vm.metrics.get(counter.index()) {
            let delta = i64::try_from(delta).unwrap_or(i64::MAX);
            abi::increment_metric(*id, delta);
        }
    }
}

extern "C" {
    /// wasm-ld's constructor runner (wasi-libc's static initialisers).
    fn __wasm_call_ctors();
}

/// WASI's reactor entry point: the host calls it once, before anything else
/// (`WasmBase::startVm`, src/wasm.cc), as it did the SDK's.
#[no_mangle]
pub extern "C" fn _initialize() {
    // SAFETY: called once by the host before any other export, as wasm-ld
    // expects of a reactor that defines its own `_initialize`.
    unsafe { __wasm_call_ctors() };
}

#[no_mangle]
pub extern "C" fn proxy_abi_version_0_2_1() {}

#[no_mangle]
pub extern "C" fn proxy_on_memory_allocate(size: usize) -> *mut u8 {
    abi::allocate(size)
}

#[no_mangle]
pub extern "C" fn proxy_on_context_create(id: u32, root_id: u32) {
    with_vm((), |_, contexts| contexts.create(id, root_id));
}

/// 1: accepted; 0: refused (Envoy keeps what it had, or fails the
/// listener at start).
#[no_mangle]
pub extern "C" fn proxy_on_configure(root_id: u32, size: usize) -> u32 {
    let accepted = with_vm(false, |vm, contexts| {
        vm.refresh_level();
        // An unreadable configuration is refused like an empty one.
        let bytes = abi::plugin_configuration(size).unwrap_or_default();
        let accepted = contexts.configure(&mut ProxyHost { vm }, root_id, bytes);
        vm.flush();
        accepted
    });
    abi::set_tick_period(TICK_MS);
    u32::from(accepted)
}

#[no_mangle]
pub extern "C" fn proxy_on_tick(_root_id: u32) {
    VM.with(|vm| {
        vm.refresh_level();
        vm.flush();
    });
}

#[no_mangle]
pub extern "C" fn proxy_on_request_headers(id: u32, _headers: usize, _end_of_stream: u32) -> u32 {
    with_vm((), |vm, contexts| {
        contexts.request_headers(&mut ProxyHost { vm }, id)
    });
    CONTINUE
}

#[no_mangle]
pub extern "C" fn proxy_on_response_headers(id: u32, _headers: usize, _end_of_stream: u32) -> u32 {
    with_vm((), |vm, contexts| {
        contexts.response_headers(&mut ProxyHost { vm }, id)
    });
    CONTINUE
}

/// Frees the context; a root context's teardown publishes the VM's counts
/// (what `proxy_on_done` did under the SDK).
#[no_mangle]
pub extern "C" fn proxy_on_delete(id: u32) {
    let was_root = with_vm(false, |_, contexts| contexts.delete(id));
    if was_root {
        VM.with(VmState::flush);
    }
}
