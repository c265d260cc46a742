//! The seeded command generator of the write load (`Gen`) and the `DEL_MANY` script.

use super::*;

/// Deletes every ARGV item from KEYS[1] in one script: one command, many deletes
/// (replicated and written to the AOF as MULTI / CF.DEL ... / EXEC).
pub const DEL_MANY: &str = "local r = {} for i, v in ipairs(ARGV) do \
     r[i] = redis.call('CF.DEL', KEYS[1], v) end return r";

/// The seeded command generator. `fresh` numbers new items and keys, so names stay
/// unique even when a crash rolls the model back.
#[derive(Clone)]
pub struct Gen {
    pub rng: Rng,
    pub fresh: u64,
}

impl Gen {
    pub fn new(seed: u64) -> Gen {
        Gen {
            rng: Rng(seed),
            fresh: 0,
        }
    }

    pub fn fresh_item(&mut self) -> Vec<u8> {
        self.fresh += 1;
        let n = self.fresh;
        let mut v = format!("item:{n}").into_bytes();
        if n.is_multiple_of(7) {
            // Binary-safe: NUL, high bytes, CRLF (the AOF is RESP).
            v.extend_from_slice(b"\x00\xff\r\n*1\r\n");
        }
        v
    }

    /// `n` items: fresh ones, and with `dup_pct`% chance each an already-acked one.
    pub fn items(&mut self, n: u64, dup_pct: u64, known: &[Vec<u8>]) -> Vec<Vec<u8>> {
        (0..n)
            .map(|_| {
                if !known.is_empty() && self.rng.percent(dup_pct) {
                    known[self.rng.below(known.len() as u64) as usize].clone()
                } else {
                    self.fresh_item()
                }
            })
            .collect()
    }

    /// The filters every load starts with (explicitly reserved ones).
    pub fn setup() -> Vec<Op> {
        vec![
            Op::new(
                Kind::Reserve,
                &["BF.RESERVE", "bf:ns", "0.01", "400", "NONSCALING"],
                vec![],
            ),
            Op::new(
                Kind::Reserve,
                &["CF.RESERVE", "cf:exact", "300", "ERROR", "0.0000001"],
                vec![],
            ),
            Op::new(
                Kind::Reserve,
                &["CF.RESERVE", "cf:full", "64", "EXPANSION", "0"],
                vec![],
            ),
            // Its second sub-filter has more slots than one delete's compaction
            // budget, so a compaction pass can be caught half-way.
            Op::new(
                Kind::Reserve,
                &["CF.RESERVE", "cf:compact", "2048", "EXPANSION", "2"],
                vec![],
            ),
        ]
    }

    pub fn next_op(&mut self, m: &Model) -> Op {
        let bf_known = |k: &str| m.bf.get(k).map(|x| x.items.clone()).unwrap_or_default();
        let cf_known = |k: &str| m.cf.get(k).map(|x| x.items.clone()).unwrap_or_default();
        let pick = self.rng.below(110);
        match pick {
            0..=9 => {
                let it = self.items(1, 10, &bf_known("bf:auto"));
                Op::new(Kind::BfAdd, &["BF.ADD", "bf:auto"], it)
            }
            10..=21 => {
                let n = self.rng.range(5, 60);
                let it = self.items(n, 10, &bf_known("bf:madd"));
                Op::new(Kind::BfAdd, &["BF.MADD", "bf:madd"], it)
            }
            22..=31 => {
                let n = self.rng.range(5, 60);
                let it = self.items(n, 10, &bf_known("bf:ins"));
                Op::new(
                    Kind::BfAdd,
                    &[
                        "BF.INSERT",
                        "bf:ins",
                        "CAPACITY",
                        "300",
                        "ERROR",
                        "0.001",
                        "EXPANSION",
                        "2",
                        "ITEMS",
                    ],
                    it,
                )
            }
            32..=34 => {
                // Non-scaling, 400 items: fills up, then error elements.
                let n = self.rng.range(5, 30);
                let it = self.items(n, 5, &bf_known("bf:ns"));
                Op::new(Kind::BfAdd, &["BF.MADD", "bf:ns"], it)
            }
            35..=37 => {
                // A brand-new key, created implicitly (MULTI/EXEC in the AOF).
                self.fresh += 1;
                let n = self.rng.range(1, 20);
                let it = self.items(n, 0, &[]);
                if pick == 35 {
                    let key = format!("bf:new:{}", self.fresh);
                    Op::new(Kind::BfAdd, &["BF.MADD", &key], it)
                } else {
                    let key = format!("cf:new:{}", self.fresh);
                    Op::new(Kind::CfAdd, &["CF.INSERT", &key, "ITEMS"], it)
                }
            }
            38..=47 => {
                let it = self.items(1, 20, &cf_known("cf:auto"));
                Op::new(Kind::CfAdd, &["CF.ADD", "cf:auto"], it)
            }
            48..=52 => {
                let key = if pick.is_multiple_of(2) {
                    "cf:auto"
                } else {
                    "cf:exact"
                };
                let it = self.items(1, 30, &cf_known(key));
                Op::new(Kind::CfAdd, &["CF.ADDNX", key], it)
            }
            53..=63 => {
                let n = self.rng.range(5, 40);
                let it = self.items(n, 10, &cf_known("cf:ins"));
                Op::new(
                    Kind::CfAdd,
                    &["CF.INSERT", "cf:ins", "CAPACITY", "200", "ITEMS"],
                    it,
                )
            }
            64..=69 => {
                let it = self.items(1, 25, &cf_known("cf:exact"));
                Op::new(Kind::CfAdd, &["CF.ADD", "cf:exact"], it)
            }
            70..=74 => {
                let n = self.rng.range(2, 20);
                let it = self.items(n, 25, &cf_known("cf:exact"));
                Op::new(Kind::CfAdd, &["CF.INSERT", "cf:exact", "ITEMS"], it)
            }
            75..=77 => {
                // Fixed size: fills up, then -1 elements (until deletes make room).
                let n = self.rng.range(5, 20);
                let it = self.items(n, 10, &cf_known("cf:full"));
                Op::new(Kind::CfAdd, &["CF.INSERT", "cf:full", "ITEMS"], it)
            }
            100..=105 => {
                // Grows big sub-filters; the deletes below start automatic compactions.
                let n = self.rng.range(20, 60);
                let it = self.items(n, 5, &cf_known("cf:compact"));
                Op::new(Kind::CfAdd, &["CF.INSERT", "cf:compact", "ITEMS"], it)
            }
            106..=108 => {
                let mut live =
                    m.cf.get("cf:compact")
                        .map(CfModel::live)
                        .unwrap_or_default();
                let n = (self.rng.range(5, 30) as usize).min(live.len());
                let mut it = Vec::with_capacity(n);
                for _ in 0..n {
                    let i = self.rng.below(live.len() as u64) as usize;
                    it.push(live.swap_remove(i));
                }
                let mut op = Op::new(Kind::CfDel, &["EVAL", DEL_MANY, "1", "cf:compact"], it);
                op.key = "cf:compact".to_string();
                op
            }
            109 => Op::new(Kind::Other, &["CF.COMPACT", "cf:compact"], vec![]),
            _ => {
                let keys = ["cf:auto", "cf:ins", "cf:exact", "cf:full"];
                let key = keys[self.rng.below(keys.len() as u64) as usize];
                let live = m.cf.get(key).map(CfModel::live).unwrap_or_default();
                if live.is_empty() {
                    let it = self.items(1, 0, &[]);
                    Op::new(Kind::CfAdd, &["CF.ADD", key], it)
                } else {
                    let item = live[self.rng.below(live.len() as u64) as usize].clone();
                    Op::new(Kind::CfDel, &["CF.DEL", key], vec![item])
                }
            }
        }
    }
}
