//! `mnemo healthcheck`: exits 0 when the server at the address answers `/healthz` with 200 (for
//! container healthchecks, where no HTTP client may be installed).

use super::HealthcheckArgs;

/// Asks `/healthz` over a plain TCP connection; an error says why the server is not healthy.
pub async fn run(args: HealthcheckArgs) -> anyhow::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut addr = args.addr;
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    let probe = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").await?;
        let mut buf = Vec::new();
        stream.read_to_end(&mut buf).await?;
        anyhow::Ok(buf)
    };
    let buf = tokio::time::timeout(std::time::Duration::from_secs(args.timeout_secs), probe)
        .await
        .map_err(|_| anyhow::anyhow!("no answer from {addr} within {}s", args.timeout_secs))??;
    let status_line = String::from_utf8_lossy(&buf).lines().next().unwrap_or_default().to_string();
    if status_line.split_whitespace().nth(1) == Some("200") {
        Ok(())
    } else {
        anyhow::bail!("unhealthy: {status_line}")
    }
}
