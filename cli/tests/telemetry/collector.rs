//! A loopback OTLP collector: accepts http/protobuf (HTTP/1.1 POST /v1/traces, /v1/metrics)
//! or grpc (HTTP/2), in the clear or behind TLS with a test certificate; decodes every export
//! request and keeps it with its raw bytes and headers, and counts the connections it accepted.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use tokio::net::TcpListener;

/// The CA that signed the TLS collector's certificate: a client trusts it through
/// `SSL_CERT_FILE`, which the system's root store reads.
pub const TEST_CA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/telemetry/tls/ca.pem");

/// Which OTLP transport the collector speaks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    HttpProtobuf,
    Grpc,
}

#[derive(Default)]
struct Received {
    traces: Vec<ExportTraceServiceRequest>,
    metrics: Vec<ExportMetricsServiceRequest>,
    /// Every request body, for "this text never left" checks.
    raw: Vec<u8>,
    /// Every request's headers, as (lower-case name, value).
    headers: Vec<(String, String)>,
}

/// The running collector.
pub struct Collector {
    pub url: String,
    connections: Arc<AtomicUsize>,
    received: Arc<Mutex<Received>>,
}

/// A metric's data points: each one's attributes and value (a histogram's: its count).
pub type Points = Vec<(BTreeMap<String, String>, f64)>;

/// One exported span, flattened for assertions.
#[derive(Debug, Clone)]
pub struct SpanSeen {
    pub name: String,
    pub span_id: Vec<u8>,
    pub parent_span_id: Vec<u8>,
    pub attrs: BTreeMap<String, String>,
    /// Its status code: 0 unset, 1 ok, 2 error.
    pub status: i32,
    /// Names of its events, each with its attributes.
    pub events: Vec<(String, BTreeMap<String, String>)>,
}

impl Collector {
    pub async fn start(transport: Transport) -> Self {
        Self::listen(transport, None).await
    }

    /// A collector behind TLS with the certificate in `tls/collector.pem` (for 127.0.0.1),
    /// signed by the test CA in `tls/ca.pem` (see [`TEST_CA`]).
    pub async fn start_tls(transport: Transport) -> Self {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/telemetry/tls");
        let certs = CertificateDer::pem_file_iter(dir.join("collector.pem"))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_file(dir.join("collector.key")).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        config.alpn_protocols = vec![match transport {
            Transport::HttpProtobuf => b"http/1.1".to_vec(),
            Transport::Grpc => b"h2".to_vec(),
        }];
        Self::listen(
            transport,
            Some(tokio_rustls::TlsAcceptor::from(Arc::new(config))),
        )
        .await
    }

    async fn listen(transport: Transport, tls: Option<tokio_rustls::TlsAcceptor>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let scheme = if tls.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://{}", listener.local_addr().unwrap());
        let connections = Arc::new(AtomicUsize::new(0));
        let received = Arc::new(Mutex::new(Received::default()));
        let (count, store) = (connections.clone(), received.clone());
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                count.fetch_add(1, Ordering::SeqCst);
                let store = store.clone();
                let tls = tls.clone();
                tokio::spawn(async move {
                    match tls {
                        Some(tls) => {
                            // A handshake the client gave up on is its business.
                            if let Ok(stream) = tls.accept(stream).await {
                                serve(stream, transport, store).await;
                            }
                        }
                        None => serve(stream, transport, store).await,
                    }
                });
            }
        });
        Self {
            url,
            connections,
            received,
        }
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Whether `text` occurs in any request body received.
    pub fn saw_text(&self, text: &str) -> bool {
        let raw = &self.received.lock().unwrap().raw;
        raw.windows(text.len()).any(|w| w == text.as_bytes())
    }

    /// The values of header `name` over every request received.
    pub fn header_values(&self, name: &str) -> Vec<String> {
        let received = self.received.lock().unwrap();
        received
            .headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// The resource attributes of the span exports (the same on each).
    pub fn resource(&self) -> BTreeMap<String, String> {
        let received = self.received.lock().unwrap();
        received
            .traces
            .iter()
            .flat_map(|r| &r.resource_spans)
            .find_map(|r| r.resource.as_ref())
            .map(|r| attrs(&r.attributes))
            .unwrap_or_default()
    }

    /// Every span received, in arrival order.
    pub fn spans(&self) -> Vec<SpanSeen> {
        let received = self.received.lock().unwrap();
        let spans = received
            .traces
            .iter()
            .flat_map(|r| &r.resource_spans)
            .flat_map(|r| &r.scope_spans)
            .flat_map(|s| &s.spans);
        spans.map(seen).collect()
    }

    /// Each metric's last reported data points (cumulative), as (attributes, value).
    pub fn metrics(&self) -> BTreeMap<String, Points> {
        use opentelemetry_proto::tonic::metrics::v1::metric::Data;
        use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as Number;
        let received = self.received.lock().unwrap();
        let mut out = BTreeMap::new();
        for metric in received
            .metrics
            .iter()
            .flat_map(|r| &r.resource_metrics)
            .flat_map(|r| &r.scope_metrics)
            .flat_map(|s| &s.metrics)
        {
            let points: Points = match &metric.data {
                Some(Data::Sum(sum)) => sum
                    .data_points
                    .iter()
                    .map(|p| {
                        let value = match p.value {
                            Some(Number::AsInt(i)) => i as f64,
                            Some(Number::AsDouble(d)) => d,
                            None => f64::NAN,
                        };
                        (attrs(&p.attributes), value)
                    })
                    .collect(),
                Some(Data::Histogram(h)) => h
                    .data_points
                    .iter()
                    .map(|p| (attrs(&p.attributes), p.count as f64))
                    .collect(),
                _ => Vec::new(),
            };
            out.insert(metric.name.clone(), points);
        }
        out
    }
}

/// Answers the export requests of one connection.
async fn serve(
    stream: impl tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    transport: Transport,
    store: Arc<Mutex<Received>>,
) {
    let io = TokioIo::new(stream);
    let service = hyper::service::service_fn(move |req| {
        let store = store.clone();
        async move { handle(req, store, transport).await }
    });
    let _ = match transport {
        Transport::HttpProtobuf => {
            hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await
        }
        Transport::Grpc => {
            hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .serve_connection(io, service)
                .await
        }
    };
}

async fn handle(
    req: Request<Incoming>,
    store: Arc<Mutex<Received>>,
    transport: Transport,
) -> Result<Response<http_body_util::combinators::BoxBody<Bytes, Infallible>>, Infallible> {
    let path = req.uri().path().to_owned();
    let headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let body = req.into_body().collect().await.unwrap().to_bytes();
    let message = match transport {
        // The grpc frame: a compression flag byte and a 4-byte length before the message.
        Transport::Grpc => body.slice(5..),
        Transport::HttpProtobuf => body.clone(),
    };
    {
        let mut store = store.lock().unwrap();
        store.raw.extend_from_slice(&body);
        store.headers.extend(headers);
        if path.ends_with("/v1/traces") || path.ends_with("TraceService/Export") {
            store
                .traces
                .push(ExportTraceServiceRequest::decode(message).unwrap());
        } else if path.ends_with("/v1/metrics") || path.ends_with("MetricsService/Export") {
            store
                .metrics
                .push(ExportMetricsServiceRequest::decode(message).unwrap());
        } else {
            panic!("unexpected OTLP path {path}");
        }
    }
    // Both answers are the empty Export*ServiceResponse.
    let response = match transport {
        Transport::HttpProtobuf => Response::builder()
            .header("content-type", "application/x-protobuf")
            .body(Full::new(Bytes::new()).boxed())
            .unwrap(),
        Transport::Grpc => {
            let mut trailers = hyper::HeaderMap::new();
            trailers.insert("grpc-status", "0".parse().unwrap());
            let frames = futures::stream::iter([
                Ok::<_, Infallible>(Frame::data(Bytes::from_static(&[0, 0, 0, 0, 0]))),
                Ok(Frame::trailers(trailers)),
            ]);
            Response::builder()
                .header("content-type", "application/grpc")
                .body(StreamBody::new(frames).boxed())
                .unwrap()
        }
    };
    Ok(response)
}

fn seen(span: &Span) -> SpanSeen {
    SpanSeen {
        name: span.name.clone(),
        span_id: span.span_id.clone(),
        parent_span_id: span.parent_span_id.clone(),
        attrs: attrs(&span.attributes),
        status: span.status.as_ref().map_or(0, |s| s.code),
        events: span
            .events
            .iter()
            .map(|e| (e.name.clone(), attrs(&e.attributes)))
            .collect(),
    }
}

fn attrs(list: &[KeyValue]) -> BTreeMap<String, String> {
    list.iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(AnyValue::StringValue(s)) => s.clone(),
                Some(AnyValue::IntValue(i)) => i.to_string(),
                Some(AnyValue::DoubleValue(d)) => d.to_string(),
                Some(AnyValue::BoolValue(b)) => b.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key.clone(), value)
        })
        .collect()
}
