//! What the server runs with: the settings resolved from the command line
//! (args.rs) and the QUIC configuration every connection is accepted with.
//!
//! Holds the validation that needs the file system (the key log is opened,
//! the qlog folder created) and every fixed transport parameter. Must not
//! hold sockets, connections or anything that changes while serving.

use std::fs::File;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use crate::args::{Args, Cc};
use h3replay::Fatal;

/// Idle timeout advertised to clients, ms.
const IDLE_TIMEOUT_MS: u64 = 30_000;
/// Concurrent request streams a client may open (nginx's HTTP/2 default).
const MAX_STREAMS_BIDI: u64 = 128;
/// Unidirectional streams a client may open (control, QPACK encoder and
/// decoder, with room to spare).
const MAX_STREAMS_UNI: u64 = 16;
/// Most bytes of the client's unknown transport parameters kept (for the qlog).
const UNKNOWN_PARAMS_BYTES: usize = 1024;
/// Connection-level flow-control window, bytes.
const MAX_DATA: u64 = 16 << 20;
/// Flow-control window of each request stream, bytes, both directions.
const MAX_STREAM_DATA_BIDI: u64 = 4 << 20;
/// Flow-control window of each unidirectional stream, bytes.
const MAX_STREAM_DATA_UNI: u64 = 1 << 20;

/// Everything fixed for the server's life, each field from the option of
/// the same name (args.rs).
pub struct Settings {
    /// UDP addresses served on, one socket each (`--listen`). Required.
    pub listen: Vec<SocketAddr>,
    /// Congestion control (`--cc`). Defaults to CUBIC.
    pub cc: Cc,
    /// Initial congestion window, packets (`--initial-cwnd-packets`).
    /// Defaults to 10.
    pub initial_cwnd_packets: usize,
    /// Pace outgoing packets (`--pacing`). Defaults to true.
    pub pacing: bool,
    /// Send with UDP_SEGMENT (`--gso`). Defaults to false.
    pub gso: bool,
    /// Largest UDP payload sent, bytes (`--max-udp-payload`). Defaults to 1350.
    pub max_udp_payload: usize,
    /// The max_ack_delay transport parameter, ms (`--max-ack-delay-ms`).
    /// Defaults to 25.
    pub max_ack_delay_ms: u64,
    /// The ack_delay_exponent transport parameter (`--ack-delay-exponent`).
    /// Defaults to 3.
    pub ack_delay_exponent: u64,
    /// Announce `alt-svc: h3=":PORT"` on every response (`--alt-svc`).
    /// Defaults to true.
    pub alt_svc: bool,
    /// Accept 0-RTT from resuming clients (`--early-data`). Defaults to false.
    pub early_data: bool,
    /// Folder for one qlog file per connection (`--qlog-dir`, created at
    /// start). Defaults to $QLOGDIR when set, otherwise None (no qlog).
    pub qlog_dir: Option<PathBuf>,
    /// $SSLKEYLOGFILE, opened for appending at start. Defaults to None (no
    /// key log).
    pub keylog: Option<File>,
    /// JSON summary file (`--summary`). Defaults to None (no summary).
    pub summary: Option<PathBuf>,
}

impl Settings {
    /// Open the key log and create the qlog folder; Fatal::Input naming the
    /// file and the option when either cannot be.
    pub fn from_args(args: &Args) -> Result<Settings, Fatal> {
        let keylog =
            match &args.keylog_file {
                Some(p) => Some(File::options().create(true).append(true).open(p).map_err(
                    |e| {
                        Fatal::Input(format!(
                            "{}: SSLKEYLOGFILE cannot be opened: {e}",
                            p.display()
                        ))
                    },
                )?),
                None => None,
            };
        args.common.create_qlog_dir()?;
        Ok(Settings {
            listen: args.common.listen.clone(),
            cc: args.cc,
            initial_cwnd_packets: args.common.initial_cwnd_packets as usize,
            pacing: args.pacing.on(),
            gso: args.gso.on(),
            max_udp_payload: args.common.max_udp_payload as usize,
            max_ack_delay_ms: args.max_ack_delay_ms,
            ack_delay_exponent: args.ack_delay_exponent,
            alt_svc: args.common.alt_svc.on(),
            early_data: args.early_data.on(),
            qlog_dir: args.common.qlog_dir.clone(),
            keylog,
            summary: args.common.summary.clone(),
        })
    }
}

/// The QUIC configuration every connection is accepted with: the
/// certificate and key (Fatal::Input naming the file if unusable), HTTP/3's
/// ALPN, the settings' congestion control and the fixed transport parameters
/// above.
pub fn quic_config(s: &Settings, cert: &Path, key: &Path) -> Result<quiche::Config, Fatal> {
    let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION)
        .map_err(|e| Fatal::Runtime(format!("quiche config: {e}")))?;
    c.load_cert_chain_from_pem_file(&cert.to_string_lossy())
        .map_err(|e| {
            Fatal::Input(format!(
                "{}: not a usable PEM certificate chain ({e})",
                cert.display()
            ))
        })?;
    c.load_priv_key_from_pem_file(&key.to_string_lossy())
        .map_err(|e| {
            Fatal::Input(format!(
                "{}: not a usable PEM private key ({e})",
                key.display()
            ))
        })?;
    c.set_application_protos(quiche::h3::APPLICATION_PROTOCOL)
        .map_err(|e| Fatal::Runtime(format!("ALPN: {e}")))?;
    c.set_max_idle_timeout(IDLE_TIMEOUT_MS);
    c.set_max_send_udp_payload_size(s.max_udp_payload);
    c.set_max_ack_delay(s.max_ack_delay_ms);
    c.set_ack_delay_exponent(s.ack_delay_exponent);
    c.set_initial_max_data(MAX_DATA);
    c.set_initial_max_stream_data_bidi_local(MAX_STREAM_DATA_BIDI);
    c.set_initial_max_stream_data_bidi_remote(MAX_STREAM_DATA_BIDI);
    c.set_initial_max_stream_data_uni(MAX_STREAM_DATA_UNI);
    c.set_initial_max_streams_bidi(MAX_STREAMS_BIDI);
    c.set_initial_max_streams_uni(MAX_STREAMS_UNI);
    c.set_disable_active_migration(true);
    // Kept so that the qlog shows them: Chromium's QUIC connection options
    // travel in one (google_connection_options, 0x3128).
    c.enable_track_unknown_transport_parameters(UNKNOWN_PARAMS_BYTES);
    c.set_cc_algorithm(s.cc.algorithm());
    c.set_initial_congestion_window_packets(s.initial_cwnd_packets);
    // quiche paces BBR; CUBIC and Reno are paced by crate::pacer, so quiche's
    // pacer stays off for them (it would pace them too, at 1.25 x cwnd / srtt).
    c.enable_pacing(s.pacing && s.cc.paced_by_quiche());
    if s.early_data {
        c.enable_early_data();
    }
    if s.keylog.is_some() {
        c.log_keys();
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(extra: &[&str]) -> Args {
        let argv = h3replay::cli::with_required("h3server", extra);
        let mut a = Args::try_parse_from(argv).unwrap();
        // Whatever the environment running the tests says.
        a.keylog_file = None;
        a.common.qlog_dir = None;
        a
    }

    #[test]
    fn settings_follow_the_options() {
        let a = args(&[
            "--pacing",
            "off",
            "--gso",
            "on",
            "--alt-svc",
            "off",
            "--max-udp-payload",
            "1252",
        ]);
        let s = Settings::from_args(&a).unwrap();
        assert!(!s.pacing && s.gso && !s.alt_svc);
        assert_eq!(s.max_udp_payload, 1252);
        assert_eq!(s.initial_cwnd_packets, 10);
        assert!(s.keylog.is_none() && s.qlog_dir.is_none() && s.summary.is_none());
        let s = Settings::from_args(&args(&[])).unwrap();
        assert!(s.pacing && !s.gso && s.alt_svc);
    }

    #[test]
    fn the_client_receives_the_ack_delay_and_payload_size_asked_for() {
        use crate::connstats::tests::{cert_files, deliver, pair};
        let (dir, cert, key) = cert_files("tparams");
        let handshake = |extra: &[&str]| {
            let s = Settings::from_args(&args(extra)).unwrap();
            let mut config = quic_config(&s, &cert, &key).unwrap();
            let (mut client, mut server) = pair(&mut config);
            while !(client.is_established() && server.is_established()) {
                assert!(
                    deliver(&mut client, &mut server) + deliver(&mut server, &mut client) > 0,
                    "stalled"
                );
            }
            let tp = client.peer_transport_params().unwrap();
            (
                tp.max_ack_delay,
                tp.ack_delay_exponent,
                server.max_send_udp_payload_size(),
            )
        };
        assert_eq!(handshake(&[]), (25, 3, 1350));
        let asked = [
            "--max-ack-delay-ms",
            "5",
            "--ack-delay-exponent",
            "10",
            "--max-udp-payload",
            "1200",
        ];
        assert_eq!(handshake(&asked), (5, 10, 1200));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn unusable_files_are_bad_input_naming_them() {
        let file = std::env::temp_dir().join(format!("h3server-config-{}", std::process::id()));
        std::fs::write(&file, b"").unwrap();
        let mut a = args(&[]);
        a.common.qlog_dir = Some(file.join("qlog"));
        let e = Settings::from_args(&a).err().unwrap();
        assert!(
            matches!(&e, Fatal::Input(m) if m.contains("--qlog-dir cannot be created")),
            "{e:?}"
        );
        a.common.qlog_dir = None;
        a.keylog_file = Some(file.join("keys"));
        let e = Settings::from_args(&a).err().unwrap();
        assert!(
            matches!(&e, Fatal::Input(m) if m.contains("SSLKEYLOGFILE cannot be opened")),
            "{e:?}"
        );
        a.keylog_file = None;
        let s = Settings::from_args(&a).unwrap();
        let e = quic_config(&s, &file, &file).err().unwrap();
        let name = file.display().to_string();
        assert!(
            matches!(&e, Fatal::Input(m) if m.starts_with(&name) && m.contains("certificate chain")),
            "{e:?}"
        );
        std::fs::remove_file(&file).unwrap();
    }
}
