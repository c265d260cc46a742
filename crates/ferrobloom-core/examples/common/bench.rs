//! Helpers shared by the `bench_*` examples (included with `#[path]`; not an
//! example itself): argument parsing, sizes, a fixed-seed generator, statistics
//! and JSON-lines output. Every example prints one JSON object per line on stdout
//! (read by `bench/run.py`) and progress on stderr.

#![allow(dead_code)]

use std::collections::HashMap;
use std::fmt::Write as _;

/// `--name value` pairs (and bare `--flag`s, stored as "1").
pub struct Args(HashMap<String, String>);

impl Args {
    pub fn parse() -> Args {
        let mut m = HashMap::new();
        let mut it = std::env::args().skip(1).peekable();
        while let Some(a) = it.next() {
            let Some(name) = a.strip_prefix("--") else {
                eprintln!("ignoring argument {a:?} (expected --name value)");
                continue;
            };
            let v = match it.peek() {
                Some(v) if !v.starts_with("--") => it.next().unwrap_or_default(),
                _ => "1".to_string(),
            };
            m.insert(name.to_string(), v);
        }
        Args(m)
    }

    pub fn str(&self, name: &str, default: &str) -> String {
        self.0
            .get(name)
            .cloned()
            .unwrap_or_else(|| default.to_string())
    }

    pub fn list(&self, name: &str, default: &str) -> Vec<String> {
        self.str(name, default)
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    }

    pub fn u64(&self, name: &str, default: u64) -> u64 {
        self.0
            .get(name)
            .map(|v| parse_size(v).unwrap_or_else(|| panic!("--{name}: bad number {v:?}")))
            .unwrap_or(default)
    }

    pub fn f64(&self, name: &str, default: f64) -> f64 {
        self.0
            .get(name)
            .map(|v| {
                v.parse()
                    .unwrap_or_else(|_| panic!("--{name}: bad number {v:?}"))
            })
            .unwrap_or(default)
    }

    pub fn sizes(&self, name: &str, default: &str) -> Vec<u64> {
        self.list(name, default)
            .iter()
            .map(|s| parse_size(s).unwrap_or_else(|| panic!("--{name}: bad size {s:?}")))
            .collect()
    }
}

/// `16K`, `4M`, `1G` (binary units), `1e6`, `2000000`.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1u64 << 10),
        'M' | 'm' => (&s[..s.len() - 1], 1 << 20),
        'G' | 'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    if let Ok(v) = num.parse::<u64>() {
        return v.checked_mul(mult);
    }
    let f: f64 = num.parse().ok()?;
    (f >= 0.0).then_some((f * mult as f64) as u64)
}

/// `16 KiB`, `4 MiB`, `1 GiB`, or bytes.
pub fn fmt_size(b: u64) -> String {
    for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if b >= 1 << shift && b.is_multiple_of(1 << shift) {
            return format!("{} {unit}", b >> shift);
        }
    }
    for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if b >= 1 << shift {
            return format!("{:.1} {unit}", b as f64 / (1u64 << shift) as f64);
        }
    }
    format!("{b} B")
}

/// splitmix64: a tiny deterministic generator (fixed seeds everywhere).
pub struct SplitMix(pub u64);

impl SplitMix {
    #[inline]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A 16-byte item: `tag` keeps key spaces apart (members vs non-members vs
/// per-round items), `i` numbers the item inside its key space.
#[inline]
pub fn item16(tag: u64, i: u64) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&tag.to_le_bytes());
    out[8..].copy_from_slice(&i.to_le_bytes());
    out
}

pub fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

pub fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

pub fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

/// One JSON object, built field by field and printed as one line.
pub struct Json(String);

impl Json {
    pub fn new(kind: &str) -> Json {
        let mut j = Json(String::from("{"));
        j.str("kind", kind);
        j
    }
    fn key(&mut self, k: &str) {
        if self.0.len() > 1 {
            self.0.push(',');
        }
        let _ = write!(self.0, "\"{k}\":");
    }
    pub fn str(&mut self, k: &str, v: &str) -> &mut Self {
        self.key(k);
        let _ = write!(
            self.0,
            "\"{}\"",
            v.replace('\\', "\\\\").replace('"', "\\\"")
        );
        self
    }
    pub fn num(&mut self, k: &str, v: f64) -> &mut Self {
        self.key(k);
        if v.is_finite() {
            let _ = write!(self.0, "{v}");
        } else {
            self.0.push_str("null");
        }
        self
    }
    pub fn int(&mut self, k: &str, v: u64) -> &mut Self {
        self.key(k);
        let _ = write!(self.0, "{v}");
        self
    }
    /// `k_min`, `k_median`, `k_max` and the raw samples `k_all`.
    pub fn stats(&mut self, k: &str, v: &[f64]) -> &mut Self {
        self.num(&format!("{k}_min"), min(v));
        self.num(&format!("{k}_median"), median(v));
        self.num(&format!("{k}_max"), max(v));
        self.key(&format!("{k}_all"));
        self.0.push('[');
        for (i, x) in v.iter().enumerate() {
            if i > 0 {
                self.0.push(',');
            }
            let _ = write!(self.0, "{x:.3}");
        }
        self.0.push(']');
        self
    }
    pub fn emit(&mut self) {
        self.0.push('}');
        println!("{}", self.0);
        self.0.pop();
    }
}

/// The kernel's transparent-huge-page mode (`always`, `madvise`, `never`).
pub fn thp_mode() -> String {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .ok()
        .and_then(|s| {
            let a = s.find('[')?;
            let b = s.find(']')?;
            s.get(a + 1..b).map(str::to_string)
        })
        .unwrap_or_else(|| "unknown".to_string())
}

/// Turns transparent huge pages off for this process, as redis-server does at
/// startup (`disable-thp yes`, the default) when the kernel mode is `always`, so
/// buffers here get the same page size (and TLB behaviour) as the server's.
pub fn disable_thp_like_redis() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with PR_SET_THP_DISABLE only changes this process' flag.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}
