//! `--filter wasm|dynamic-module` and `--module FILE`: which build of the
//! filter Envoy loads. Every command that writes the filter's configuration
//! (`render envoy`, `render ecds`, `render xds`, `watch`) takes the pair,
//! even where it has nothing to change (`render envoy --xds-dir`), so one
//! set of flags drives a whole setup.

use attache_render::filter::FilterBinary;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum FilterKind {
    /// The proxy-wasm .wasm in Envoy's Wasm filter (V8): sandboxed, the default.
    #[default]
    Wasm,
    /// The dynamic module .so in Envoy 1.40's dynamic-modules filter: native.
    DynamicModule,
}

#[derive(Debug, Clone, clap::Args)]
pub struct FilterArgs {
    /// Which build of the filter Envoy loads: the .wasm (--wasm) or the
    /// dynamic module libattache_module.so (--module; Envoy 1.40, native
    /// code in Envoy's process: docs/security.md).
    #[arg(long, value_enum, value_name = "KIND", default_value_t = FilterKind::Wasm)]
    pub filter: FilterKind,
    /// The dynamic module (target/release/libattache_module.so), as Envoy
    /// sees it; with --filter dynamic-module.
    #[arg(long, value_name = "FILE")]
    pub module: Option<String>,
}

impl FilterArgs {
    /// The filter configuration's type, for the listeners' ECDS `type_urls`.
    pub fn type_url(&self) -> &'static str {
        match self.filter {
            FilterKind::Wasm => attache_render::wasm::WASM_TYPE_URL,
            FilterKind::DynamicModule => attache_render::module::MODULE_TYPE_URL,
        }
    }

    /// Refuses a pair that cannot be meant, as a usage error (exit 2, as
    /// clap reports a bad flag): `--module` without `--filter
    /// dynamic-module`, or `--filter dynamic-module` without `--module`
    /// where a configuration will name it (`needs_file`).
    pub fn check(&self, needs_file: bool) {
        match (self.filter, &self.module) {
            (FilterKind::Wasm, Some(module)) => usage(
                clap::error::ErrorKind::ArgumentConflict,
                format!("--module {module} is given but --filter is wasm\n  hint: add --filter dynamic-module to load the module, or leave --module out\n"),
            ),
            (FilterKind::DynamicModule, None) if needs_file => usage(
                clap::error::ErrorKind::MissingRequiredArgument,
                "--filter dynamic-module needs --module FILE (target/release/libattache_module.so, as Envoy sees it)\n".into(),
            ),
            _ => {}
        }
    }

    /// The build and file the filter configuration names; `wasm` is the
    /// command's `--wasm`. A usage error (exit 2) when neither is given.
    pub fn binary(&self, wasm: Option<&str>) -> FilterBinary {
        self.check(true);
        match (self.filter, &self.module, wasm) {
            (FilterKind::DynamicModule, Some(module), _) => FilterBinary::DynamicModule(module.clone()),
            (FilterKind::Wasm, _, Some(wasm)) => FilterBinary::Wasm(wasm.to_string()),
            _ => usage(
                clap::error::ErrorKind::MissingRequiredArgument,
                "the filter's configuration needs --wasm FILE (or --filter dynamic-module --module FILE)\n".into(),
            ),
        }
    }
}

fn usage(kind: clap::error::ErrorKind, message: String) -> ! {
    clap::Error::raw(kind, message).exit()
}
