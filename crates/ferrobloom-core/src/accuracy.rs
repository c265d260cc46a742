//! Sound bounds for measuring a filter's false-positive rate: how many false
//! positives a run of probes may show before it says the rate was exceeded.
//! Used by the core's accuracy tests, the server tests and anyone who checks a
//! filter against its promise.

/// The most false positives `probes` independent probes show, except with
/// probability below 1e-6, when the false-positive rate is at most `p`:
/// Chernoff's bound on the binomial tail, `P(X ≥ t) ≤ exp(-n·D(t/n ‖ p))`
/// with `D` the Kullback-Leibler divergence of Bernoulli distributions. A count
/// above it says the rate exceeds `p` (wrongly, with probability below 1e-6).
pub fn max_false_positives(probes: u64, p: f64) -> u64 {
    let n = probes as f64;
    let mut t = (n * p).floor() as u64 + 1;
    loop {
        let q = t as f64 / n;
        if q >= 1.0 {
            return probes;
        }
        let d = q * (q / p).ln() + (1.0 - q) * ((1.0 - q) / (1.0 - p)).ln();
        if -n * d <= (1e-6f64).ln() {
            return t - 1;
        }
        t += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_sits_above_the_mean_and_tightens_with_more_probes() {
        // 1e6 probes at 1%: mean 10,000, standard deviation about 99.5; the
        // bound is about 4.9 deviations above the mean.
        let b = max_false_positives(1_000_000, 0.01);
        assert!((10_400..10_600).contains(&b), "{b}");
        // Relative to the mean, more probes give a tighter bound.
        let small = max_false_positives(10_000, 0.01) as f64 / 100.0;
        assert!(small > b as f64 / 10_000.0);
        // At a rate of 1 every probe may be positive.
        assert_eq!(max_false_positives(1000, 1.0), 1000);
    }
}
