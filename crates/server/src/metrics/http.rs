//! The HTTP endpoint: `GET /metrics` ([`serve_metrics`]).

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{ALLOW, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use permafrost_executor::Database;
use tokio::net::TcpListener;

use crate::error::Result;

use super::prometheus::*;
use super::record::*;
use super::rows::*;

pub(crate) type Body = Full<Bytes>;

pub(crate) fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut r = Response::new(Body::new(Bytes::from_static(text.as_bytes())));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

pub(crate) async fn answer(db: Arc<Database>, m: Arc<ServerMetrics>, req: Request<Incoming>) -> Response<Body> {
    if req.uri().path() != "/metrics" {
        return plain(StatusCode::NOT_FOUND, "not found; try /metrics\n");
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
        r.headers_mut().insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let text = match tokio::task::spawn_blocking(move || render(&rows(&db, &m))).await {
        Ok(t) => t,
        Err(_) => return plain(StatusCode::INTERNAL_SERVER_ERROR, "collecting the metrics failed\n"),
    };
    let mut r = Response::new(Body::new(Bytes::from(text)));
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE_TEXT));
    r
}

/// Serves `GET /metrics` over HTTP/1.1 from `listener` until `shutdown` resolves: 200 with
/// the Prometheus text format, 405 for other methods, 404 for other paths. Collecting the
/// figures waits for every partition, so it runs on the blocking thread pool.
pub async fn serve_metrics(
    db: Arc<Database>,
    metrics: Arc<ServerMetrics>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> Result<()> {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(Duration::from_secs(10));
    let http = Arc::new(http);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok((socket, _peer)) => {
                    let (db, metrics, http) = (db.clone(), metrics.clone(), http.clone());
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |req| {
                            let (db, metrics) = (db.clone(), metrics.clone());
                            async move { Ok::<_, Infallible>(answer(db, metrics, req).await) }
                        });
                        // A connection's errors (client gone, bad request) end that connection only.
                        let _ = http.serve_connection(TokioIo::new(socket), service).await;
                    });
                }
                // Out of file descriptors and the like: keep serving the others.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }
}
