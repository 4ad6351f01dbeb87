//! The floor every proxy-wasm HTTP filter pays: a root context and an HTTP
//! context that do nothing and let every request and response continue.
//!
//! It goes through the same path a real filter does (a root context that
//! creates the per-request context), so that the benchmark's "empty Wasm"
//! figure is the cost of V8 plus the proxy-wasm ABI and nothing else.

#![forbid(unsafe_code)]

#[cfg(target_arch = "wasm32")]
mod filter {
    use proxy_wasm::traits::{Context, HttpContext, RootContext};
    use proxy_wasm::types::{ContextType, LogLevel};

    proxy_wasm::main! {{
        proxy_wasm::set_log_level(LogLevel::Warn);
        proxy_wasm::set_root_context(|_| -> Box<dyn RootContext> { Box::new(EmptyRoot) });
    }}

    struct EmptyRoot;

    impl Context for EmptyRoot {}

    impl RootContext for EmptyRoot {
        fn on_configure(&mut self, _plugin_configuration_size: usize) -> bool {
            true
        }

        fn create_http_context(&self, _context_id: u32) -> Option<Box<dyn HttpContext>> {
            Some(Box::new(EmptyHttp))
        }

        fn get_type(&self) -> Option<ContextType> {
            Some(ContextType::HttpContext)
        }
    }

    struct EmptyHttp;

    impl Context for EmptyHttp {}

    // Every callback keeps the SDK's default, which is `Action::Continue`.
    impl HttpContext for EmptyHttp {}
}
