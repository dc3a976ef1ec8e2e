//! Telemetry over OTLP, off by default: the one place corvid exports. The core records plain
//! `tracing` spans and events (`corvid_core::telemetry`); when the user's settings or
//! `CORVID_ENABLE_TELEMETRY` turn it on, this module adds the layers that send the spans and
//! metrics to the collector the `OTEL_EXPORTER_OTLP_*` variables name (http/protobuf or grpc).
//!
//! Exports run on the SDK's own threads with bounded queues (a full queue drops spans), so a
//! slow or absent collector never holds up a turn; their errors are dropped, never printed
//! (stdout is the UI or the ACP channel); the flush at exit is bounded.

mod config;
mod metrics;

use std::time::Duration;

use corvid_core::settings::{corvid_home, process_env};
use corvid_core::telemetry::{CONTENT_TARGET, METRIC_TARGET, SPAN_TARGET};
use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::tonic_types::transport::ClientTlsConfig;
use opentelemetry_otlp::{MetricExporter, SpanExporter, WithTonicConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::{Layer, Registry};

use self::config::Config;
use self::metrics::MetricsLayer;

/// A layer of the process's subscriber.
pub type BoxedLayer = Box<dyn Layer<Registry> + Send + Sync>;

/// How long the exit waits for the last export at most, unless [`FLUSH_ENV`] says. A loopback
/// or LAN collector takes a few milliseconds; a refused or silent one used to hold the exit
/// for the exporter's retries (0.9 s of a 2 s bound), which a user feels on every `-p` run.
const FLUSH_BOUND: Duration = Duration::from_millis(200);
/// Env var with the exit's wait for the last export in milliseconds (a slow link to a
/// distant collector may want more).
const FLUSH_ENV: &str = "CORVID_TELEMETRY_FLUSH_MS";

/// The exporting providers; [`Telemetry::flush`] sends what is left at exit.
pub struct Telemetry {
    tracer: SdkTracerProvider,
    meter: SdkMeterProvider,
    /// Where the grpc exporter's connection runs: not the main runtime, which stops first at
    /// exit so that the tasks it drops end their spans before the last export.
    runtime: tokio::runtime::Runtime,
}

/// Reads the user's settings and the environment; when telemetry is on, returns the layers
/// to install and the providers to flush at exit. A setting that is wrong or an exporter that
/// cannot be built is a warning on stderr, and telemetry stays off.
pub fn start() -> Option<(Vec<BoxedLayer>, Telemetry)> {
    let user_settings = corvid_home(process_env)
        .map(|home| home.join("settings.json"))
        .and_then(|path| std::fs::read_to_string(path).ok());
    let config = match config::resolve(user_settings.as_deref(), process_env) {
        Ok(Some(config)) => config,
        Ok(None) => return None,
        Err(message) => {
            eprintln!("corvid: warning: {message}");
            return None;
        }
    };
    for warning in config::protocol_warnings(process_env) {
        eprintln!("corvid: warning: {warning}");
    }
    let started = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("telemetry")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start its runtime: {e}"))
        .and_then(|runtime| {
            // The grpc exporter starts its connection task on the runtime it is built in.
            let built = {
                let _in_runtime = runtime.enter();
                exporting(config)
            };
            built.map(|(layers, tracer, meter)| {
                let telemetry = Telemetry {
                    tracer,
                    meter,
                    runtime,
                };
                (layers, telemetry)
            })
        });
    match started {
        Ok(started) => Some(started),
        Err(e) => {
            eprintln!("corvid: warning: telemetry is off: {e}");
            None
        }
    }
}

fn exporting(
    config: Config,
) -> Result<(Vec<BoxedLayer>, SdkTracerProvider, SdkMeterProvider), String> {
    // The SDK reads `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`; a name set here would
    // override the user's.
    let mut resource = Resource::builder()
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    if !config::service_named_by_user(process_env) {
        resource = resource.with_service_name("corvid");
    }
    let resource = resource.build();
    let spans = if config::grpc_over_tls("TRACES", process_env) {
        SpanExporter::builder()
            .with_tonic()
            .with_tls_config(system_roots())
            .build()
    } else {
        SpanExporter::builder().build()
    }
    .map_err(|e| format!("cannot set up the OTLP span exporter: {e}"))?;
    let metrics = if config::grpc_over_tls("METRICS", process_env) {
        MetricExporter::builder()
            .with_tonic()
            .with_tls_config(system_roots())
            .build()
    } else {
        MetricExporter::builder().build()
    }
    .map_err(|e| format!("cannot set up the OTLP metric exporter: {e}"))?;
    let tracer = SdkTracerProvider::builder()
        .with_batch_exporter(spans)
        .with_resource(resource.clone())
        .build();
    let meter = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(metrics).build())
        .with_resource(resource)
        .build();

    let mut exported = Targets::new().with_target(SPAN_TARGET, Level::INFO);
    if config.log_prompts {
        exported = exported.with_target(CONTENT_TARGET, Level::INFO);
    }
    let trace_layer = tracing_opentelemetry::layer()
        .with_tracer(tracer.tracer("corvid"))
        .with_location(false)
        .with_threads(false)
        .with_filter(exported);
    let metric_layer = MetricsLayer::new(
        &opentelemetry::metrics::MeterProvider::meter(&meter, "corvid"),
        config.prices,
    )
    .with_filter(Targets::new().with_target(METRIC_TARGET, Level::INFO));
    let layers: Vec<BoxedLayer> = vec![Box::new(trace_layer), Box::new(metric_layer)];
    Ok((layers, tracer, meter))
}

/// TLS for grpc trusting the system's roots (`SSL_CERT_FILE` included), as the http exporter
/// does; the OTLP crate's own default trusts none.
fn system_roots() -> ClientTlsConfig {
    ClientTlsConfig::new().with_native_roots()
}

impl Telemetry {
    /// Sends the spans and metrics still buffered, waiting [`FLUSH_BOUND`] at most: an
    /// unreachable collector delays the exit by no more than that. Call it once the main
    /// runtime has stopped, so every span has ended.
    pub fn flush(self) {
        let bound = process_env(FLUSH_ENV)
            .and_then(|ms| ms.trim().parse().ok())
            .map_or(FLUSH_BOUND, Duration::from_millis);
        let Self {
            tracer,
            meter,
            runtime,
        } = self;
        flush_within(tracer, meter, bound);
        // An export still waiting past the bound is abandoned with its connection.
        runtime.shutdown_background();
    }
}

/// Shuts both providers down on threads of their own and waits `bound` at most for both.
fn flush_within(tracer: SdkTracerProvider, meter: SdkMeterProvider, bound: Duration) {
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let spans_done = done_tx.clone();
    let spawned = [
        std::thread::Builder::new()
            .name("telemetry-flush-spans".into())
            .spawn(move || {
                let _ = tracer.shutdown_with_timeout(bound);
                let _ = spans_done.send(());
            }),
        std::thread::Builder::new()
            .name("telemetry-flush-metrics".into())
            .spawn(move || {
                let _ = meter.shutdown();
                let _ = done_tx.send(());
            }),
    ];
    let deadline = std::time::Instant::now() + bound;
    for _ in spawned.iter().filter(|s| s.is_ok()) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if done_rx.recv_timeout(left).is_err() {
            return;
        }
    }
}
