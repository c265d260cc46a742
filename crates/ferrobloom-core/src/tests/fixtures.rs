//! Encoding fixtures: every kind and layout of filter, built from fixed items at
//! fixed times, against the bytes committed in `crates/ferrobloom-core/tests/fixtures/encodings.tsv`
//! (header and SCANDUMP chunks as hex, and the answers to fixed probes). Two
//! promises: a payload written by an earlier build loads into the same filter
//! (same bytes back, same answers), and the filters built today encode byte for
//! byte as they did then. `FERROBLOOM_WRITE_FIXTURES=1 cargo test fixtures`
//! writes the file anew (only ever for a new case: an existing line must never
//! change).

use super::bloom::{BloomChain, BloomLayout, ChainOptions, Limits};
use super::cuckoo::{CuckooFilter, CuckooParams};
use super::filter::BloomFilter;
use super::window::Window;

const LIMITS: Limits = Limits {
    max_bytes: 1 << 30,
    max_links: 64,
    max_filters: 32,
};

const FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/encodings.tsv");

fn item(tag: &str, i: u64) -> Vec<u8> {
    format!("{tag}:{i}").into_bytes()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("fixture hex"))
        .collect()
}

/// One fixture line: name, header, chunks (`iter:hex` joined by `,`), answers.
struct Case {
    name: String,
    header: Vec<u8>,
    chunks: Vec<(i64, Vec<u8>)>,
    answers: String,
}

impl Case {
    fn line(&self) -> String {
        let chunks: Vec<String> = self
            .chunks
            .iter()
            .map(|(i, d)| format!("{i}:{}", hex(d)))
            .collect();
        format!(
            "{}\t{}\t{}\t{}",
            self.name,
            hex(&self.header),
            chunks.join(","),
            self.answers
        )
    }

    fn parse(line: &str) -> Case {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 4, "fixture line: {line:.60}");
        let chunks = if f[2].is_empty() {
            Vec::new()
        } else {
            f[2].split(',')
                .map(|c| {
                    let (i, d) = c.split_once(':').expect("iter:hex");
                    (i.parse().expect("iter"), unhex(d))
                })
                .collect()
        };
        Case {
            name: f[0].to_string(),
            header: unhex(f[1]),
            chunks,
            answers: f[3].to_string(),
        }
    }
}

fn probes(tag: &str, added: u64) -> Vec<Vec<u8>> {
    // Every added item, then as many never added.
    (0..added)
        .map(|i| item(tag, i))
        .chain((0..added.max(200)).map(|i| item("absent", i)))
        .collect()
}

fn bits(answers: impl Iterator<Item = bool>) -> String {
    answers.map(|b| if b { '1' } else { '0' }).collect()
}

fn bloom_case(name: &str, c: &BloomFilter, tag: &str, added: u64) -> Case {
    let mut chunks = Vec::new();
    let mut it = 1;
    while let Some((next, data)) = c.scandump_chunk(it) {
        chunks.push((next, data.to_vec()));
        it = next;
    }
    // A timed filter's answers depend on the time: `window_answers`.
    let answers = bits(
        probes(tag, added)
            .iter()
            .map(|p| !c.is_timed() && c.contains_item(p, 0)),
    );
    Case {
        name: name.to_string(),
        header: c.encode_header(),
        chunks,
        answers,
    }
}

fn window_answers(c: &BloomFilter, tag: &str, added: u64, now: u64) -> String {
    let w = c.as_window().expect("windowed");
    bits(
        probes(tag, added)
            .iter()
            .map(|p| w.contains(&c.hash(p), now)),
    )
}

fn cuckoo_case(name: &str, f: &CuckooFilter, tag: &str, added: u64) -> Case {
    let mut chunks = Vec::new();
    let mut it = 1;
    while let Some((next, data)) = f.scandump_chunk(it) {
        chunks.push((next, data.to_vec()));
        it = next;
    }
    let answers = bits(probes(tag, added).iter().map(|p| f.contains(&f.hash(p))));
    Case {
        name: name.to_string(),
        header: f.encode_header(),
        chunks,
        answers,
    }
}

/// The layouts of the first cases. `classic` is the classic layout as it was
/// when these lines were written (link code 0, plain double hashing): its
/// payloads and answers are pinned by them. Today's classic links (code 4) are
/// the `classic-mixed` cases at the end of the file ([`LATER_LAYOUTS`]).
const LAYOUTS: [(&str, BloomLayout); 4] = [
    ("classic", BloomLayout::ClassicDouble),
    ("blocked", BloomLayout::Blocked),
    ("paired", BloomLayout::Paired),
    ("redisbloom", BloomLayout::RedisBloom),
];

/// Windowed filters' link shapes come from the generation sizing rules
/// (`window/sizing.rs`), not from the encoding: a change of those rules writes
/// other shapes in the same format (every reader takes a link's shape from its
/// record). Today's cases carry the rules' name; the cases written by earlier
/// rules stay in the file unchanged and are only loaded back
/// (`committed_fixtures_load_back_identically`).
const WINDOW_SIZING: &str = "sized-for-bursts";

/// Whether a fixture line was written by earlier sizing rules of windowed
/// filters: `window/<layout>/<mode>` (generations of a quarter of the
/// capacity), `window/<layout>/<mode>/sized-by-rate` (sized by the observed
/// stream, without the rules for batches) and `…/sized-for-batches` (without
/// the `3·sqrt` headroom, the half-link after a generation without history
/// and the room floor of half a share).
fn earlier_window_sizing(name: &str) -> bool {
    name.starts_with("window/")
        && (name.split('/').count() == 3
            || name.ends_with("/sized-by-rate")
            || name.ends_with("/sized-for-batches"))
}

/// `window/<layout>/<mode>` of a windowed case's name.
fn window_base(name: &str) -> String {
    name.split('/').take(3).collect::<Vec<_>>().join("/")
}

/// The windowed filters' fixed clock: 2026-01-01T00:00:00Z.
const T0: u64 = 1_767_225_600_000;
const W_MS: u64 = 60_000;

/// Layouts added after the first cases, in the order their cases were appended.
const LATER_LAYOUTS: [(&str, BloomLayout); 1] = [("classic-mixed", BloomLayout::Classic)];

fn build_all() -> Vec<Case> {
    let mut out = Vec::new();
    for (lname, layout) in LAYOUTS {
        layout_cases(&mut out, lname, layout);
    }
    cuckoo_cases(&mut out);
    for (lname, layout) in LATER_LAYOUTS {
        layout_cases(&mut out, lname, layout);
    }
    rule_cases(&mut out);
    out
}

/// Classic filters large enough for the derivation rule (`bloom/sizing.rs`,
/// "Which classic derivation") to give links plain double hashing (code 0),
/// appended after it: `scaling` (2,100 items at 0.01, EXPANSION 1, 2,200
/// added) has a code-0 first link (2,100 items at 0.005, just above the
/// threshold) and a code-4 second one (0.0025, below it); `nonscaling` (1,400
/// items at 0.01, full) one code-0 link.
fn rule_cases(out: &mut Vec<Case>) {
    for (mode, cap, expansion, n) in [
        ("scaling", 2100u64, 1u32, 2200u64),
        ("nonscaling", 1400, 0, 1400),
    ] {
        let mut c = BloomChain::new(cap, 0.01, expansion, &LIMITS).expect("create");
        let tag = format!("bf-classic-rule-{mode}");
        for i in 0..n {
            let _ = c.add(&c.hash(&item(&tag, i)), &LIMITS);
        }
        let layouts: Vec<BloomLayout> = c.links().iter().map(|l| l.shape().layout).collect();
        let want: &[BloomLayout] = match expansion {
            0 => &[BloomLayout::ClassicDouble],
            _ => &[BloomLayout::ClassicDouble, BloomLayout::Classic],
        };
        assert_eq!(layouts, want, "classic-rule/{mode}");
        let c = BloomFilter::Chain(c);
        out.push(bloom_case(
            &format!("bloom/classic-rule/{mode}"),
            &c,
            &tag,
            n,
        ));
    }
}

/// Items added to a Bloom case, by its name's layout and mode.
fn bloom_items(lname: &str, mode: &str) -> u64 {
    match (lname, mode) {
        ("classic-rule", "scaling") => 2200,
        ("classic-rule", _) => 1400,
        (_, "scaling") => 450,
        (_, "nonscaling") => 100,
        _ => 300,
    }
}

/// The Bloom cases of one layout: scaling, non-scaling, options and windowed.
fn layout_cases(out: &mut Vec<Case>, lname: &str, layout: BloomLayout) {
    {
        // Scaling: 100 items, 450 added (three links), and non-scaling at capacity.
        for (mode, expansion, n) in [("scaling", 2u32, 450u64), ("nonscaling", 0, 100)] {
            let mut c =
                BloomChain::with_layout(100, 0.01, expansion, layout, &LIMITS).expect("create");
            let tag = format!("bf-{lname}-{mode}");
            for i in 0..n {
                let _ = c.add(&c.hash(&item(&tag, i)), &LIMITS);
            }
            let c = BloomFilter::Chain(c);
            out.push(bloom_case(&format!("bloom/{lname}/{mode}"), &c, &tag, n));
        }
        if layout == BloomLayout::RedisBloom {
            return;
        }
        // valkey-bloom's TIGHTENING and SEED (header version 2).
        let opts = ChainOptions {
            tightening: 0.7,
            seed: Some(*b"0123456789abcdef0123456789abcdef"),
        };
        let mut c = BloomChain::with_options(50, 0.001, 4, layout, opts, &LIMITS).expect("create");
        let tag = format!("bf-{lname}-options");
        for i in 0..300 {
            let _ = c.add(&c.hash(&item(&tag, i)), &LIMITS);
        }
        let c = BloomFilter::Chain(c);
        out.push(bloom_case(&format!("bloom/{lname}/options"), &c, &tag, 300));
        // Windowed: 40 items per quarter window over two windows.
        for (mode, expansion) in [("scaling", 2u32), ("nonscaling", 0)] {
            let w = Window::new(100, 0.01, expansion, layout, W_MS, &LIMITS).expect("window");
            let mut c = BloomFilter::from(w);
            let tag = format!("bw-{lname}-{mode}");
            let mut now = T0;
            for i in 0..320u64 {
                now = T0 + i * (W_MS / 160) + 7;
                let h = c.hash(&item(&tag, i));
                if let Some(w) = c.as_window_mut() {
                    let _ = w.add(&h, now, &LIMITS);
                }
            }
            let name = format!("window/{lname}/{mode}/{WINDOW_SIZING}");
            let mut case = bloom_case(&name, &c, &tag, 320);
            case.answers = window_answers(&c, &tag, 320, now);
            out.push(case);
        }
    }
}

fn cuckoo_cases(out: &mut Vec<Case>) {
    for (lname, redisbloom, fp_bits) in [("ferrobloom", false, 12u8), ("redisbloom", true, 8)] {
        let p = CuckooParams {
            capacity: 64,
            bucket_size: 2,
            max_iterations: 20,
            expansion: 2,
            fp_bits,
            error_rate: None,
            redisbloom,
        };
        let mut f = CuckooFilter::new(&p, LIMITS.max_bytes).expect("cuckoo");
        let tag = format!("cf-{lname}");
        for i in 0..200 {
            let _ = f.insert(&f.hash(&item(&tag, i)), 32, LIMITS.max_bytes);
        }
        for i in (0..200).step_by(7) {
            f.delete(&f.hash(&item(&tag, i)));
        }
        out.push(cuckoo_case(&format!("cuckoo/{lname}/grown"), &f, &tag, 200));
    }
}

fn fixtures() -> Vec<Case> {
    let text = std::fs::read_to_string(FILE).expect("tests/fixtures/encodings.tsv");
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(Case::parse)
        .collect()
}

#[test]
fn fixtures_built_today_are_byte_for_byte_the_committed_ones() {
    let built = build_all();
    if std::env::var_os("FERROBLOOM_WRITE_FIXTURES").is_some() {
        let mut text = String::from(
            "# name\theader (hex)\tSCANDUMP chunks (iter:hex, ...)\tanswers to fixed probes\n",
        );
        // Lines of earlier windowed sizing rules stay, each before today's case.
        let earlier: Vec<Case> = fixtures()
            .into_iter()
            .filter(|f| earlier_window_sizing(&f.name))
            .collect();
        for c in &built {
            let today = c.name.starts_with("window/");
            for e in earlier
                .iter()
                .filter(|e| today && window_base(&e.name) == window_base(&c.name))
            {
                text.push_str(&e.line());
                text.push('\n');
            }
            text.push_str(&c.line());
            text.push('\n');
        }
        std::fs::create_dir_all(std::path::Path::new(FILE).parent().expect("dir")).expect("mkdir");
        std::fs::write(FILE, text).expect("write fixtures");
    }
    let fixed: Vec<Case> = fixtures()
        .into_iter()
        .filter(|f| !earlier_window_sizing(&f.name))
        .collect();
    assert_eq!(fixed.len(), built.len(), "one fixture per case");
    for (f, b) in fixed.iter().zip(&built) {
        assert_eq!(f.name, b.name);
        assert!(f.header == b.header, "{}: header differs", f.name);
        assert!(f.chunks == b.chunks, "{}: chunks differ", f.name);
        assert_eq!(f.answers, b.answers, "{}: answers differ", f.name);
    }
}

#[test]
fn committed_fixtures_load_back_identically() {
    for f in fixtures() {
        if f.name.starts_with("cuckoo/") {
            let mut g = CuckooFilter::from_header(&f.header, LIMITS.max_bytes)
                .unwrap_or_else(|e| panic!("{}: {e}", f.name));
            for (i, d) in &f.chunks {
                g.load_chunk(*i, d)
                    .unwrap_or_else(|e| panic!("{}: {e}", f.name));
            }
            assert_eq!(g.encode_header(), f.header, "{}", f.name);
            let back = cuckoo_case(&f.name, &g, "", 0);
            assert!(back.chunks == f.chunks, "{}: chunks", f.name);
            // The fixture's answers cover the added items, then the absent ones.
            let prefix = f.name.replace("cuckoo/", "cf-").replace("/grown", "");
            let got = bits(probes(&prefix, 200).iter().map(|p| g.contains(&g.hash(p))));
            assert_eq!(got, f.answers, "{}: answers", f.name);
        } else {
            let mut g = BloomFilter::from_header(&f.header, &LIMITS)
                .unwrap_or_else(|e| panic!("{}: {e:?}", f.name));
            for (i, d) in &f.chunks {
                g.load_chunk(*i, d)
                    .unwrap_or_else(|e| panic!("{}: {e:?}", f.name));
            }
            let back = bloom_case(&f.name, &g, "", 0);
            assert_eq!(back.header, f.header, "{}: header", f.name);
            assert!(back.chunks == f.chunks, "{}: chunks", f.name);
            let parts: Vec<&str> = f.name.split('/').collect();
            let (tag, n) = match parts[0] {
                "bloom" => (
                    format!("bf-{}-{}", parts[1], parts[2]),
                    bloom_items(parts[1], parts[2]),
                ),
                _ => (format!("bw-{}-{}", parts[1], parts[2]), 320),
            };
            let got = if parts[0] == "window" {
                let now = g.as_window().expect("windowed").last_ms();
                window_answers(&g, &tag, n, now)
            } else {
                bits(probes(&tag, n).iter().map(|p| g.contains_item(p, 0)))
            };
            assert_eq!(got, f.answers, "{}: answers", f.name);
        }
    }
}
