//! A probe for profiling the cost of each kind of host call the Attaché
//! filter makes per request, on top of the empty filter.
//!
//! The plugin configuration is a comma-separated list of steps, parsed once:
//! `property` reads `xds.route_name`; `remove:N` removes N request headers
//! (the client control headers the filter strips); `set:N` sets N request
//! headers; `response:N` sets N response headers. Alternatives to `remove`:
//! `check:N` reads N control headers and removes only those present;
//! `batch:N` reads the whole request map once, drops the control headers, adds
//! N headers and writes the map back (two host calls). `metric:N` increments
//! N counters; `loglevel` asks Envoy for its log level; `marker:TEXT` sets
//! the response header `x-bench-resp-a: TEXT`. Only the first line of the
//! configuration is read: the configuration-load measurement appends the
//! Attaché document, so the probe receives the same bytes as the filter
//! without parsing them (the floor of loading). An Attaché document on its
//! own (it starts with `{`) is not parsed either: the probe only looks for
//! the configuration-load marker `gen-<digits>` in its bytes and answers
//! with it, so the floor can load the very file `attache render ecds`
//! writes, in the same format. The benchmark runs one
//! Envoy per prefix of the filter's per-request work and reads the marginal
//! CPU of each step from the differences.

#![forbid(unsafe_code)]

#[cfg(target_arch = "wasm32")]
mod probe {
    use proxy_wasm::hostcalls;
    use proxy_wasm::traits::{Context, HttpContext, RootContext};
    use proxy_wasm::types::{Action, ContextType, LogLevel, MapType, MetricType};
    use std::rc::Rc;

    /// Names of the Envoy control headers a strict filter strips; longer lists repeat them.
    const CONTROL: [&str; 10] = [
        "x-envoy-max-retries",
        "x-envoy-retry-on",
        "x-envoy-retry-grpc-on",
        "x-envoy-retriable-status-codes",
        "x-envoy-retriable-header-names",
        "x-envoy-upstream-rq-timeout-ms",
        "x-envoy-upstream-rq-per-try-timeout-ms",
        "x-envoy-expected-rq-timeout-ms",
        "x-envoy-hedge-on-per-try-timeout",
        "x-envoy-upstream-rq-timeout-alt-response",
    ];

    proxy_wasm::main! {{
        proxy_wasm::set_log_level(LogLevel::Warn);
        proxy_wasm::set_root_context(|_| -> Box<dyn RootContext> { Box::new(ProbeRoot::default()) });
    }}

    #[derive(Default, Clone)]
    struct Steps {
        property: bool,
        remove: usize,
        check: usize,
        batch: Vec<String>,
        set: Vec<String>,
        response: Vec<String>,
        metrics: Vec<u32>,
        log_level: bool,
        marker: Option<String>,
    }

    /// `gen-<digits>` found in a document, as the configuration-load
    /// measurement puts it in the policy's first response header.
    fn document_marker(text: &str) -> Option<String> {
        let at = text.find("gen-")?;
        let digits = text[at + 4..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        (digits > 0).then(|| text[at..at + 4 + digits].to_string())
    }

    fn parse(text: &str) -> Option<Steps> {
        let mut steps = Steps::default();
        if text.trim_start().starts_with('{') {
            steps.marker = document_marker(text);
            return Some(steps);
        }
        let first_line = text.lines().next().unwrap_or_default();
        for item in first_line
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            if let Some(marker) = item.strip_prefix("marker:") {
                steps.marker = Some(marker.to_string());
                continue;
            }
            let (name, count) = match item.split_once(':') {
                Some((name, n)) => (name, n.parse::<usize>().ok()?),
                None => (item, 1),
            };
            let names = |prefix: &str| (0..count).map(|i| format!("{prefix}-{i}")).collect();
            match name {
                "property" => steps.property = true,
                "remove" => steps.remove = count,
                "check" => steps.check = count,
                "batch" => steps.batch = names("x-probe-req"),
                "set" => steps.set = names("x-probe-req"),
                "response" => steps.response = names("x-probe-resp"),
                "loglevel" => steps.log_level = true,
                "metric" => {
                    for i in 0..count {
                        let name = format!("bench_probe_{i}");
                        steps
                            .metrics
                            .push(hostcalls::define_metric(MetricType::Counter, &name).ok()?);
                    }
                }
                _ => return None,
            }
        }
        Some(steps)
    }

    #[derive(Default)]
    struct ProbeRoot {
        steps: Rc<Steps>,
    }

    impl Context for ProbeRoot {}

    impl RootContext for ProbeRoot {
        fn on_configure(&mut self, _size: usize) -> bool {
            let bytes = self.get_plugin_configuration().unwrap_or_default();
            match parse(&String::from_utf8_lossy(&bytes)) {
                Some(steps) => {
                    self.steps = Rc::new(steps);
                    true
                }
                None => false,
            }
        }

        fn create_http_context(&self, _context_id: u32) -> Option<Box<dyn HttpContext>> {
            Some(Box::new(ProbeHttp {
                steps: Rc::clone(&self.steps),
            }))
        }

        fn get_type(&self) -> Option<ContextType> {
            Some(ContextType::HttpContext)
        }
    }

    struct ProbeHttp {
        steps: Rc<Steps>,
    }

    impl Context for ProbeHttp {}

    impl ProbeHttp {
        fn batch(&self) {
            let Ok(current) = hostcalls::get_map_bytes(MapType::HttpRequestHeaders) else {
                return;
            };
            let mut next: Vec<(&str, &[u8])> = current
                .iter()
                .filter(|(name, _)| !CONTROL.contains(&name.as_str()))
                .map(|(name, value)| (name.as_str(), value.as_slice()))
                .collect();
            next.extend(
                self.steps
                    .batch
                    .iter()
                    .map(|name| (name.as_str(), b"1".as_slice())),
            );
            let _ = hostcalls::set_map_bytes(MapType::HttpRequestHeaders, next);
        }
    }

    impl HttpContext for ProbeHttp {
        fn on_http_request_headers(&mut self, _n: usize, _eos: bool) -> Action {
            if self.steps.property {
                let _ = hostcalls::get_property(vec!["xds", "route_name"]);
            }
            for name in CONTROL.iter().cycle().take(self.steps.remove) {
                let _ = hostcalls::set_map_value_bytes(MapType::HttpRequestHeaders, name, None);
            }
            for name in CONTROL.iter().cycle().take(self.steps.check) {
                if let Ok(Some(_)) =
                    hostcalls::get_map_value_bytes(MapType::HttpRequestHeaders, name)
                {
                    let _ = hostcalls::set_map_value_bytes(MapType::HttpRequestHeaders, name, None);
                }
            }
            if !self.steps.batch.is_empty() {
                self.batch();
            }
            for name in &self.steps.set {
                let _ =
                    hostcalls::set_map_value_bytes(MapType::HttpRequestHeaders, name, Some(b"1"));
            }
            for id in &self.steps.metrics {
                let _ = hostcalls::increment_metric(*id, 1);
            }
            if self.steps.log_level {
                let _ = hostcalls::get_log_level();
            }
            Action::Continue
        }

        fn on_http_response_headers(&mut self, _n: usize, _eos: bool) -> Action {
            for name in &self.steps.response {
                let _ =
                    hostcalls::set_map_value_bytes(MapType::HttpResponseHeaders, name, Some(b"1"));
            }
            if let Some(marker) = &self.steps.marker {
                let _ = hostcalls::set_map_value_bytes(
                    MapType::HttpResponseHeaders,
                    "x-bench-resp-a",
                    Some(marker.as_bytes()),
                );
            }
            Action::Continue
        }
    }
}
