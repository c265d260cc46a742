//! Measured false-positive rates against the requested ones.

use super::*;

/// Fills `instances` independent filters (different seeds) to each level of
/// `fills` (multiples of the capacity) and returns, per level, the fraction of
/// `probes` non-members per filter that test positive, averaged over the filters.
/// Small filters need many instances: one 1,000-item filter's FPR varies by about
/// 5% around its expectation with the particular set of bits that happen to be set.
fn measured_fpr(
    cap: u64,
    p: f64,
    expansion: u32,
    layout: BloomLayout,
    fills: &[u64],
    instances: u64,
    probes: u64,
) -> Vec<(f64, usize, u64, u64)> {
    let limits = Limits::default();
    let mut out = vec![(0.0, 0usize, 0u64, 0u64); fills.len()];
    for inst in 0..instances {
        let mut c = BloomChain::with_layout(cap, p, expansion, layout, &limits).unwrap();
        let mut gen = SplitMix(0x5eed ^ cap ^ p.to_bits() ^ (inst << 32));
        let mut probe = SplitMix(0xfa15e ^ inst);
        let mut kept = Vec::new();
        let mut done = 0u64;
        for (slot, &fill) in fills.iter().enumerate() {
            while done < fill * cap {
                let item = gen.item(1);
                match c.add(&ItemHash::of(&item), &limits) {
                    Ok(_) => {}
                    Err(BloomError::Full) if expansion == 0 => {}
                    Err(e) => panic!("{e:?}"),
                }
                if kept.len() < 1000 {
                    kept.push(item);
                }
                done += 1;
            }
            let fp = (0..probes)
                .filter(|_| c.contains(&ItemHash::of(&probe.item(2))))
                .count();
            let o = &mut out[slot];
            o.0 += fp as f64 / (probes * instances) as f64;
            o.1 = c.links().len();
            o.2 = c.items();
            o.3 = c.mem_usage();
        }
        for item in &kept {
            assert!(c.contains(&ItemHash::of(item)), "false negative");
        }
    }
    out
}

/// The measured false-positive rate stays at or below the requested rate, for
/// every rate, capacity and scaling mode, with the chain filled to 1x and 4x its
/// initial capacity (a non-scaling filter refuses what does not fit, so its 4x
/// row measures the full filter again). Each estimate uses 1,000,000 probes of
/// non-members; the margin is 4 binomial standard errors at the requested rate,
/// `4 * sqrt(p (1 - p) / 1e6)` (a correct filter exceeds it with probability
/// about 3e-5 per row). Seeds are fixed, so the run is repeatable.
#[test]
fn false_positive_rate_stays_below_requested() {
    const PROBES: u64 = 1_000_000;
    let mut report = String::new();
    for layout in [
        BloomLayout::Classic,
        BloomLayout::Blocked,
        BloomLayout::Paired,
    ] {
        for &p in &[0.1, 0.01, 0.001, 0.0001] {
            for &cap in &[1000u64, 1_000_000] {
                // Small filters: 1,000 filters x 1,000 probes; large: 1 x 1,000,000.
                let instances = if cap < 100_000 { 1000 } else { 1 };
                for &expansion in &[2u32, 0] {
                    let rows = measured_fpr(
                        cap,
                        p,
                        expansion,
                        layout,
                        &[1, 4],
                        instances,
                        PROBES / instances,
                    );
                    for (&(rate, links, items, mem), fill) in rows.iter().zip([1, 4]) {
                        let margin = 4.0 * (p * (1.0 - p) / PROBES as f64).sqrt();
                        report.push_str(&format!(
                            "| {} | {p} | {cap} | {} | {fill}x | {links} | {rate:.6} | {:.2} |\n",
                            layout.name(),
                            if expansion == 0 {
                                "non-scaling"
                            } else {
                                "scaling x2"
                            },
                            (mem * 8) as f64 / items as f64,
                        ));
                        assert!(
                        rate <= p + margin,
                        "{layout:?} p={p} cap={cap} expansion={expansion} fill={fill}x: measured {rate} > {p} + {margin}"
                    );
                    }
                }
            }
        }
    }
    println!("| layout | error | capacity | mode | fill | links | measured FPR | bits/item |\n|---|---|---|---|---|---|---|---|\n{report}");
}

#[test]
fn paired_links_measure_their_error_rate() {
    // A full link at 0.16% (a windowed generation's first link at 1%): the
    // rate measured over 400,000 never-added items stays within 4 standard
    // deviations of the bound, and every added item answers present.
    let limits = Limits::default();
    let mut c = BloomChain::with_layout(100_000, 0.0032, 0, BloomLayout::Paired, &limits).unwrap();
    let mut rng = SplitMix(7);
    let added: Vec<u64> = (0..100_000).map(|_| rng.next()).collect();
    for x in &added {
        c.add(&ItemHash::of(&x.to_le_bytes()), &limits).unwrap();
    }
    assert!(added
        .iter()
        .all(|x| c.contains(&ItemHash::of(&x.to_le_bytes()))));
    let n = 400_000u32;
    let fp = (0..n)
        .filter(|_| c.contains(&ItemHash::of(&rng.next().to_le_bytes())))
        .count() as f64;
    let p = c.links()[0].shape().error;
    let bound = f64::from(n) * p + 4.0 * (f64::from(n) * p * (1.0 - p)).sqrt();
    assert!(fp <= bound, "{fp} false positives, bound {bound} (p = {p})");
    assert!(
        fp > 0.2 * f64::from(n) * p,
        "{fp}: the link is not sized for {p}"
    );
}
