//! Memory per arrival pattern on a real server (issue 27, items 4 and 6):
//! BF.INFO Size of windowed filters fed streams that are not aligned to
//! generation boundaries (moved clock), against a plain filter of the same
//! capacity and error; and the resident memory of many keys whose streams are
//! far below their capacity. No timing: sizes and RSS only.

use super::*;

/// Items a pattern adds in the step at `t` ms after its start (`cap` per
/// window at the full rate; `acc` carries fractions). The same patterns as
/// the core's `window/tests/memory.rs` and `make bench` part `window`.
fn arrivals(pattern: &str, cap: u64, t: i64, step: i64, acc: &mut f64, seed: &mut u64) -> u64 {
    let r = cap as f64 / W_MS as f64 * step as f64;
    let x = t as f64 / W_MS as f64 * std::f64::consts::TAU;
    let want = match pattern {
        "steady" => r,
        "swing30" => 0.99 * r * (1.0 + 0.3 * x.sin()),
        "half" => r / 2.0,
        "peak130" => r * (1.0 + 0.3 * (x / 2.0).sin()),
        "poisson" => {
            // Normal approximation of a Poisson count of mean 0.95·r.
            let mut u = || {
                *seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((*seed >> 11) as f64 / (1u64 << 53) as f64).max(1e-300)
            };
            let (a, b) = (u(), u());
            let z = (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos();
            let m = 0.95 * r;
            return (m + z * m.sqrt()).round().max(0.0) as u64;
        }
        // A batch of capacity/52 every W/50 (12 s), at the step 4.8 s into it.
        "batches" => {
            let slot = W_MS / 50;
            let at = 4 * slot / 10;
            let hits = (t / slot..=(t + step - 1) / slot)
                .filter(|s| (t..t + step).contains(&(s * slot + at)))
                .count() as u64;
            return hits * (cap / 52);
        }
        _ => unreachable!(),
    };
    *acc += want;
    let n = acc.floor();
    *acc -= n;
    n as u64
}

fn plain_size(con: &mut Connection, key: &str, error: &str, cap: u64) -> i64 {
    let r: String = exec(con, &["BF.RESERVE", key, error, &cap.to_string()]).unwrap();
    assert_eq!(r, "OK");
    let all: Vec<String> = (0..cap).map(|i| item(key, i)).collect();
    for c in all.chunks(5_000) {
        madd(con, key, c);
    }
    info_int(con, key, "SIZE")
}

/// Every pattern that keeps at most the capacity in any window costs at most
/// 1.6x a plain filter of the same capacity and error once it has run two
/// windows (peaking at 1.3x the capacity: 2.1x; half the capacity: 1.6x a plain
/// filter of half the capacity), at 1% and 0.1%; the false-positive rate at
/// the end stays within the error. Before the sizing by observed rate (commit
/// 02834f7), the swinging stream measured 2.79x here.
#[test]
fn window_memory_follows_the_stream_on_the_server() {
    let s = Server::start();
    let mut con = s.conn();
    let cap = 20_000u64;
    let step = 6_000i64; // 100 steps per window
    let patterns = ["steady", "swing30", "poisson", "batches", "half", "peak130"];
    for (error, p) in [("0.01", 0.01), ("0.001", 0.001)] {
        let plain = plain_size(&mut con, &format!("plain{error}"), error, cap) as f64;
        let half = plain_size(&mut con, &format!("half{error}"), error, cap / 2) as f64;
        let keys: Vec<String> = patterns.iter().map(|p| format!("{p}:{error}")).collect();
        for k in &keys {
            let r: String = exec(
                &mut con,
                &["BF.RESERVE", k, error, &cap.to_string(), "WINDOW", "600"],
            )
            .unwrap();
            assert_eq!(r, "OK");
        }
        // Start 12.345 s past a generation boundary of the test clock.
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        let start = (now_ms / (W_MS / 4) + 1) * (W_MS / 4) + 12_345 - now_ms;
        let mut acc = vec![0.0; keys.len()];
        let mut seed = 7u64;
        let mut next = vec![0u64; keys.len()];
        let mut settled = vec![0i64; keys.len()];
        let mut t = 0;
        while t < 6 * W_MS {
            set_clock(&mut con, start + t);
            for (i, k) in keys.iter().enumerate() {
                let n = arrivals(patterns[i], cap, t, step, &mut acc[i], &mut seed);
                let batch: Vec<String> = (next[i]..next[i] + n).map(|j| item(k, j)).collect();
                next[i] += n;
                if !batch.is_empty() {
                    madd(&mut con, k, &batch);
                }
                if t >= 2 * W_MS {
                    settled[i] = settled[i].max(info_int(&mut con, k, "SIZE"));
                }
            }
            t += step;
        }
        for (i, k) in keys.iter().enumerate() {
            let ratio = settled[i] as f64 / plain;
            let n = 20_000usize;
            let probes: Vec<String> = (0..n as u64)
                .map(|j| item(&format!("never{k}"), j))
                .collect();
            let fp = ones(&mexists(&mut con, k, &probes)) as f64 / n as f64;
            println!("{k}: {ratio:.3}x a plain filter, FP {fp:.5}");
            assert!(fp <= bound(p, n), "{k}: FP {fp}");
            // Peaking at 1.3x the capacity: the issue asks 2x. This start and
            // these coarse steps were the bench's worst, `bench_window_memory
            // --capacity 20000 --step 600 --phase 3890` 2.018x before a
            // stream that rises through a window stopped being held to the
            // room (1.909x; 1.925x at the worst of 15 phases; 2.04x before
            // issue #27's second round: docs/windowed.md).
            let most = match patterns[i] {
                "peak130" => 2.0,
                _ => 1.6,
            };
            assert!(ratio <= most, "{k}: {ratio}x a plain filter");
            if patterns[i] == "half" {
                let actual = settled[i] as f64 / half;
                println!("{k}: {actual:.3}x a plain filter of half the capacity");
                assert!(actual <= 1.6, "{k}: {actual}x what arrives");
            }
        }
        set_clock(&mut con, 0);
    }
}

/// Many keys rotating small generations (< 1 MiB: zeroed eagerly, see
/// docs/windowed.md "Resident memory") with streams far below their capacity:
/// after the first window the generations follow the stream, so the keys'
/// BF.INFO Size and the server's resident memory are what the streams hold, not
/// the capacity. Before the sizing by observed rate (commit 02834f7, Redis 7.0):
/// 212 MB of BF.INFO Size in all, resident memory grew 216 MB.
#[test]
fn window_resident_memory_follows_sparse_streams() {
    let s = Server::start();
    let mut con = s.conn();
    let keys: Vec<String> = (0..100).map(|i| format!("sparse{i}")).collect();
    let rss = |con: &mut Connection| -> i64 {
        let _: Value = exec(con, &["MEMORY", "PURGE"]).unwrap_or(Value::Nil);
        let info: String = exec(con, &["INFO", "memory"]).unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("used_memory_rss:"))
            .and_then(|v| v.trim().parse().ok())
            .expect("used_memory_rss")
    };
    let base = rss(&mut con);
    for k in &keys {
        let r: String = exec(
            &mut con,
            &["BF.RESERVE", k, "0.01", "1000000", "WINDOW", "600"],
        )
        .unwrap();
        assert_eq!(r, "OK");
    }
    // 40 items per key every 30 s of test clock (1,600 per window) for 4 windows.
    let step = W_MS / 20;
    let mut id = 0u64;
    for s_ in 0..80i64 {
        set_clock(&mut con, 12_345 + s_ * step);
        for k in &keys {
            let batch: Vec<String> = (id..id + 40).map(|j| item(k, j)).collect();
            madd(&mut con, k, &batch);
        }
        id += 40;
    }
    let total: i64 = keys.iter().map(|k| info_int(&mut con, k, "SIZE")).sum();
    let grown = rss(&mut con) - base;
    println!(
        "100 keys of capacity 1M, 1,600 items per window each: BF.INFO Size {total} bytes in \
         all, resident memory grew {grown} bytes"
    );
    // A plain filter holding 1,600 items at 1% is about 2.2 KB: 100 keys, 220 KB;
    // five generations sized by a share of the capacity would be 210 MB.
    assert!(total < 100 * 8_000, "Size {total}");
    assert!(grown < 64 << 20, "resident memory grew {grown} bytes");
    set_clock(&mut con, 0);
}
