//! User-space pacing for CUBIC and Reno.
//!
//! quiche paces its BBR; for CUBIC and Reno its pacer is left off (so every
//! `SendInfo::at` is "now"), and this kernel has no fq qdisc to pace for us.
//! So the server computes release times itself and a timer holds each
//! datagram until then.
//!
//! Rate: `gain × cwnd / smoothed RTT`, gain 2 in slow start and 1.25 after
//! it (the gains of Chromium's TcpCubicSenderBytes, the QUIC sender of the
//! reproduced paper; 1.25 is RFC 9002 §7.7's N). Slow start is taken to last
//! until the first loss or congestion-window reduction (quiche does not
//! expose ssthresh). No pacing before the first RTT sample (the handshake),
//! after which even the first data flight is spaced: there is no unpaced
//! initial burst.
//!
//! Schedule: a generic cell rate algorithm. Each datagram is due
//! `len / rate` after the previous one's theoretical time; a datagram may
//! leave up to `TOLERANCE` ahead of its theoretical time, which absorbs timer
//! wake-up latency without bursting at the rates of the emulated links (at
//! 10 ms RTT and a 32-packet window the interval is 156 µs). An idle
//! connection earns no credit: the schedule restarts at "now".

use std::time::{Duration, Instant};

/// How far ahead of its theoretical time a datagram may leave.
pub const TOLERANCE: Duration = Duration::from_micros(100);

pub const GAIN_SLOW_START: f64 = 2.0;
pub const GAIN_CONGESTION_AVOIDANCE: f64 = 1.25;

/// What the pacer reads from the connection's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathView {
    /// Congestion window, bytes.
    pub cwnd: usize,
    /// Smoothed RTT.
    pub srtt: Duration,
    /// Whether an RTT sample was taken (otherwise `srtt` is the initial guess).
    pub has_rtt_sample: bool,
    /// Packets declared lost so far.
    pub lost: usize,
}

impl PathView {
    pub fn of(conn: &quiche::Connection) -> Option<PathView> {
        let p = conn.path_stats().next()?;
        Some(PathView {
            cwnd: p.cwnd,
            srtt: p.rtt,
            has_rtt_sample: p.min_rtt.is_some(),
            lost: p.lost,
        })
    }
}

#[derive(Debug, Default, Clone)]
pub struct Pacer {
    /// Theoretical departure time of the next datagram.
    tat: Option<Instant>,
    left_slow_start: bool,
    max_cwnd: usize,
}

impl Pacer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Pacing rate in bytes per second, or None when not pacing yet.
    pub fn rate(&mut self, path: &PathView) -> Option<f64> {
        if path.cwnd < self.max_cwnd || path.lost > 0 {
            self.left_slow_start = true;
        }
        self.max_cwnd = self.max_cwnd.max(path.cwnd);
        if !path.has_rtt_sample || path.srtt.is_zero() || path.cwnd == 0 {
            return None;
        }
        let gain = if self.left_slow_start {
            GAIN_CONGESTION_AVOIDANCE
        } else {
            GAIN_SLOW_START
        };
        Some(gain * path.cwnd as f64 / path.srtt.as_secs_f64())
    }

    /// When a datagram of `len` bytes, generated at `now`, may leave.
    pub fn release_time(&mut self, now: Instant, len: usize, path: &PathView) -> Instant {
        let Some(rate) = self.rate(path) else {
            self.tat = None;
            return now;
        };
        let interval = Duration::from_secs_f64(len as f64 / rate);
        let tat = self.tat.map_or(now, |t| t.max(now));
        let at = tat.checked_sub(TOLERANCE).map_or(now, |t| t.max(now));
        self.tat = Some(tat + interval);
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: usize = 1350;

    fn path(cwnd_packets: usize, srtt_ms: u64) -> PathView {
        PathView {
            cwnd: cwnd_packets * MSS,
            srtt: Duration::from_millis(srtt_ms),
            has_rtt_sample: true,
            lost: 0,
        }
    }

    fn micros(t: Instant, t0: Instant) -> f64 {
        t.duration_since(t0).as_secs_f64() * 1e6
    }

    #[test]
    fn no_pacing_before_an_rtt_sample() {
        let mut p = Pacer::new();
        let now = Instant::now();
        let v = PathView {
            has_rtt_sample: false,
            ..path(32, 333)
        };
        for _ in 0..10 {
            assert_eq!(p.release_time(now, MSS, &v), now);
        }
    }

    #[test]
    fn first_flight_is_spaced() {
        // 32 packets, 10 ms RTT, slow start: 2 × 43200 B / 10 ms = 8.64 MB/s,
        // one 1350-byte datagram every 156.25 µs.
        let mut p = Pacer::new();
        let t0 = Instant::now();
        let v = path(32, 10);
        let times: Vec<f64> = (0..32)
            .map(|_| micros(p.release_time(t0, MSS, &v), t0))
            .collect();
        assert_eq!(times[0], 0.0);
        for (i, t) in times.iter().enumerate().skip(1) {
            let ideal = i as f64 * 156.25 - 100.0;
            assert!(
                (t - ideal).abs() < 0.01,
                "packet {i} at {t} µs, ideal {ideal}"
            );
        }
        // The flight takes about half the RTT: spaced, not a burst.
        assert!(times[31] > 4700.0 && times[31] < 5000.0, "{}", times[31]);
    }

    #[test]
    fn congestion_avoidance_gain_after_a_loss() {
        let mut p = Pacer::new();
        let v = PathView {
            lost: 1,
            ..path(32, 10)
        };
        let rate = p.rate(&v).unwrap();
        assert!((rate - 1.25 * 43200.0 / 0.010).abs() < 1.0);
        // and a window reduction counts too
        let mut p = Pacer::new();
        p.rate(&path(40, 10));
        let rate = p.rate(&path(30, 10)).unwrap();
        assert!((rate - 1.25 * 30.0 * MSS as f64 / 0.010).abs() < 1.0);
    }

    #[test]
    fn idle_earns_no_burst() {
        let mut p = Pacer::new();
        let t0 = Instant::now();
        let v = path(32, 10);
        for _ in 0..5 {
            p.release_time(t0, MSS, &v);
        }
        // A second later the schedule restarts at now: one datagram at once,
        // the next one interval (less the tolerance) later.
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(p.release_time(t1, MSS, &v), t1);
        let second = micros(p.release_time(t1, MSS, &v), t1);
        assert!((second - 56.25).abs() < 0.01, "{second}");
    }

    #[test]
    fn late_wakeups_keep_the_rate() {
        // Sending each datagram 50 µs after its release time (timer
        // latency) must not stretch the schedule.
        let mut p = Pacer::new();
        let t0 = Instant::now();
        let v = path(32, 10);
        let mut now = t0;
        let mut last = t0;
        for _ in 0..100 {
            last = p.release_time(now, MSS, &v);
            now = last.max(now) + Duration::from_micros(50);
        }
        let ideal = 99.0 * 156.25 - 100.0;
        assert!(
            (micros(last, t0) - ideal).abs() < 1.0,
            "{}",
            micros(last, t0)
        );
    }

    #[test]
    fn fast_paths_send_in_small_bursts() {
        // 0.2 ms RTT: interval 3.125 µs, so the 100 µs tolerance lets 33 go at once.
        let mut p = Pacer::new();
        let t0 = Instant::now();
        let v = PathView {
            srtt: Duration::from_micros(200),
            ..path(32, 1)
        };
        let due_now = (0..200)
            .filter(|_| p.release_time(t0, MSS, &v) == t0)
            .count();
        assert_eq!(due_now, 33);
    }
}
