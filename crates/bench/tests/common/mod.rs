//! A Permafrost server in the test's process, with the benchmarks' procedures built in.

use std::sync::Arc;

use permafrost_executor::{Config, Database};

/// A running server: its runtime, its address, and what stops it when dropped.
pub struct Server {
    pub rt: tokio::runtime::Runtime,
    pub addr: String,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Server {
    /// A server of 2 partitions on a free loopback port.
    pub fn start() -> Server {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let db = Database::open(Config::builder().partitions(2).build().unwrap()).unwrap();
        db.provide_internal(permafrost_bench::builtin::library());
        let listener = rt
            .block_on(permafrost_server::bind("127.0.0.1:0".parse().unwrap()))
            .unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        rt.spawn(permafrost_server::serve(Arc::new(db), listener, async {
            let _ = stopped.await;
        }));
        Server { rt, addr, _stop: stop }
    }

    /// A client connection of the test's own (the server's user and database are any).
    pub fn client(&self) -> tokio_postgres::Client {
        self.rt.block_on(async {
            let port = self.addr.rsplit(':').next().unwrap();
            let (c, conn) =
                tokio_postgres::connect(&format!("host=127.0.0.1 port={port} user=test"), tokio_postgres::NoTls)
                    .await
                    .unwrap();
            tokio::spawn(conn);
            c
        })
    }
}
