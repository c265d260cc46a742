//! Overfilled unions (issue: BF.MERGE returned filters above their error rate with
//! capped counts): refused by default with the estimate and the capacity named and
//! nothing changed; taken with `OVERFILL`, whose BF.CARD and `Number of items inserted`
//! are the estimate, uncapped; replicas and AOF replay apply what the primary did; the
//! per-shard recipe of docs/compatibility.md (every shard and the destination reserved
//! with the union's capacity) merges and keeps the error rate.

use super::common::bf::*;
use super::common::*;
use super::{info_field, madd_all, present, state};
use ferrobloom_core::stats::max_false_positives as allowed;

#[test]
fn overfilled_unions_are_refused_unless_overfill() {
    let s = Server::start();
    let mut con = s.conn();
    // Two NONSCALING filters of 100,000 at 1% with 90,000 items each.
    for k in ["a", "b"] {
        ok(&mut con, &format!("BF.RESERVE {k} 0.01 100000 NONSCALING"));
    }
    let (ia, ib) = (numbered("a:", 90_000), numbered("b:", 90_000));
    madd_all(&mut con, "a", &ia);
    madd_all(&mut con, "b", &ib);
    ok(&mut con, "BF.RESERVE d 0.01 100000 NONSCALING");
    let before = state(&mut con, &["a", "b", "d"]);
    for line in ["BF.MERGE d 2 a b", "BF.MERGE new 2 a b", "BF.MERGE a 1 b"] {
        let e = err(&mut con, line);
        assert!(
            e.starts_with("ERR the union holds about 1")
                && e.contains("items in sub-filter 1, above its capacity of 100000")
                && e.contains("OVERFILL"),
            "{line}: {e}"
        );
        let est: u64 = e["ERR the union holds about ".len()..]
            .split(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap();
        assert!((175_000..185_000).contains(&est), "{e}");
        assert_eq!(state(&mut con, &["a", "b", "d"]), before, "{line}");
    }
    assert_eq!(int(&mut con, "EXISTS new"), 0);
    // Accepted on purpose: the counts are the estimate, never capped.
    ok(&mut con, "BF.MERGE d 2 a b OVERFILL");
    let c = card(&mut con, "d");
    assert!((176_000..184_000).contains(&c), "BF.CARD {c}");
    assert_eq!(info_field(&mut con, "d", "ITEMS"), c);
    assert_eq!(info_field(&mut con, "d", "CAPACITY"), 100_000);
    assert_eq!(present(&mut con, "d", &ia), ia.len());
    // Such a filter's rate is what its count predicts: (1 - e^(-k n / m))^k.
    let line = &debug(&mut con, "d")[1];
    let num = |name: &str| -> f64 {
        line.split(' ')
            .find_map(|f| f.strip_prefix(name))
            .and_then(|v| v.parse().ok())
            .unwrap()
    };
    let (m, k) = (num("bits:"), num("hashes:"));
    let predicted = (1.0 - (-k * c as f64 / m).exp()).powf(k);
    let probes = numbered("never:", 50_000);
    let fp = present(&mut con, "d", &probes) as f64 / 50_000.0;
    eprintln!("overfilled union: BF.CARD {c}, FP {fp:.4}, predicted {predicted:.4}");
    assert!(
        (fp - predicted).abs() < 0.1 * predicted,
        "{fp} vs {predicted}"
    );
    // The count survives a reload (a header with items above capacity loads).
    ok(&mut con, "DEBUG RELOAD");
    assert_eq!(card(&mut con, "d"), c);
    // A NONSCALING overfilled filter is full.
    assert!(err(&mut con, "BF.ADD d brand-new").contains("full"));

    // Three scaling filters of 1,000 with 1,000 items each; fifty of 100 with 100 each.
    ok(&mut con, "FLUSHALL");
    for (n, cap) in [(3usize, 1000usize), (50, 100)] {
        let keys: Vec<String> = (0..n).map(|i| format!("{{s}}{cap}:{i}")).collect();
        for k in &keys {
            ok(&mut con, &format!("BF.RESERVE {k} 0.01 {cap}"));
            madd_all(&mut con, k, &numbered(&format!("{k}:"), cap));
        }
        let line = format!("BF.MERGE u{cap} {n} {}", keys.join(" "));
        assert!(
            err(&mut con, &line).contains("above its capacity"),
            "{line}"
        );
        ok(&mut con, &format!("{line} OVERFILL"));
        let c = card(&mut con, &format!("u{cap}")) as f64;
        let truth = (n * cap) as f64;
        assert!(
            (c / truth - 1.0).abs() < 0.1,
            "{line}: BF.CARD {c} for {truth}"
        );
    }
}

#[test]
fn replicas_and_aof_apply_what_the_primary_did() {
    let primary = Server::builder()
        .appendonly(true)
        .aof_rdb_preamble(false)
        .start();
    super::common::rdb::wait_aof_rewrite_idle(&primary);
    let replica = Server::start_replica_of(&primary);
    primary.wait_for_sync(&replica);
    let mut con = primary.conn();
    for k in ["a", "b"] {
        ok(&mut con, &format!("BF.RESERVE {k} 0.01 1000"));
        madd_all(&mut con, k, &numbered(&format!("{k}:"), 900));
    }
    err(&mut con, "BF.MERGE d 2 a b");
    ok(&mut con, "BF.MERGE d 2 a b OVERFILL");
    ok(&mut con, "BF.RESERVE e 0.01 1000");
    madd_all(&mut con, "e", &numbered("a:", 400));
    ok(&mut con, "BF.MERGE e 1 a");
    primary.wait_for_offset(&replica);
    let digest = primary.digest();
    assert_eq!(replica.digest(), digest, "replica");
    let mut rcon = replica.conn();
    assert_eq!(card(&mut rcon, "d"), card(&mut con, "d"));
    assert_eq!(int(&mut rcon, "EXISTS new"), 0);
    drop(con);
    drop(rcon);
    let mut primary = primary;
    primary.restart();
    assert_eq!(primary.digest(), digest, "AOF replay");
}

/// docs/compatibility.md's recipe: every shard's filter and the destination are
/// reserved with the union's capacity; the union then merges and keeps the rate.
#[test]
fn per_shard_recipe_merges_and_keeps_the_error_rate() {
    let s = Server::start();
    let mut con = s.conn();
    let shards = ["{u}shard1", "{u}shard2", "{u}shard3", "{u}shard4"];
    for (i, k) in shards.iter().enumerate() {
        ok(&mut con, &format!("BF.RESERVE {k} 0.001 40000"));
        madd_all(&mut con, k, &numbered(&format!("s{i}:"), 10_000));
    }
    ok(&mut con, "BF.RESERVE {u}all 0.001 40000");
    ok(
        &mut con,
        &format!("BF.MERGE {{u}}all 4 {}", shards.join(" ")),
    );
    let c = card(&mut con, "{u}all");
    assert!((39_000..=40_000).contains(&c), "BF.CARD {c}");
    assert_eq!(info_field(&mut con, "{u}all", "FILTERS"), 1);
    for i in 0..4 {
        let items = numbered(&format!("s{i}:"), 10_000);
        assert_eq!(present(&mut con, "{u}all", &items), items.len());
    }
    const PROBES: u64 = 200_000;
    let fp = present(&mut con, "{u}all", &numbered("never:", PROBES as usize)) as u64;
    eprintln!("per-shard union: {fp} false positives in {PROBES}");
    assert!(fp <= allowed(PROBES, 0.001), "{fp} in {PROBES}");
    // Shards reserved for their own part only do not fit one another's union.
    ok(&mut con, "FLUSHALL");
    for (i, k) in shards.iter().enumerate() {
        ok(&mut con, &format!("BF.RESERVE {k} 0.001 10000 NONSCALING"));
        madd_all(&mut con, k, &numbered(&format!("s{i}:"), 10_000));
    }
    let e = err(
        &mut con,
        &format!("BF.MERGE {{u}}all 4 {}", shards.join(" ")),
    );
    assert!(e.contains("above its capacity of 10000"), "{e}");
}
