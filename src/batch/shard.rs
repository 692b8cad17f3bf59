//! `--shard K/N`: one run's share of a tree or a list, so that N jobs on N machines
//! split the work and the union of their stores is the store one run writes. A module
//! belongs to a shard by its identity (name and debug id, as the store names it), not by
//! where it was found: two copies of a module land in one shard, and the partition does
//! not depend on the order or layout of the inputs, nor on the machine.

use std::fmt;

use crate::error::ArgumentError;

/// The variable Kubernetes Indexed Jobs set (0-based) for `--shard auto/N`.
pub(crate) const JOB_INDEX_VARIABLE: &str = "JOB_COMPLETION_INDEX";

/// Shard `index` (0-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    index: u32,
    count: u32,
}

impl Shard {
    /// `K/N` (K from 1 to N) or `auto/N` (K is `$JOB_COMPLETION_INDEX` + 1).
    pub(crate) fn parse(spec: &str) -> Result<Shard, ArgumentError> {
        Shard::parse_with(spec, std::env::var(JOB_INDEX_VARIABLE).ok().as_deref())
    }

    fn parse_with(spec: &str, job_index: Option<&str>) -> Result<Shard, ArgumentError> {
        let owned = || spec.to_string();
        let (k, n) = spec
            .split_once('/')
            .ok_or_else(|| ArgumentError::Shard(owned()))?;
        let count: u32 = n
            .trim()
            .parse()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| ArgumentError::ShardCount(owned()))?;
        let index = match k.trim() {
            "auto" => {
                let var = job_index.ok_or_else(|| ArgumentError::ShardAutoUnset {
                    spec: owned(),
                    var: JOB_INDEX_VARIABLE,
                })?;
                var.trim()
                    .parse::<u32>()
                    .map_err(|_| ArgumentError::ShardAutoIndex {
                        spec: owned(),
                        var: JOB_INDEX_VARIABLE,
                        index: var.to_string(),
                    })?
            }
            k => k
                .parse::<u32>()
                .ok()
                .and_then(|k| k.checked_sub(1))
                .ok_or_else(|| ArgumentError::ShardIndex(owned()))?,
        };
        if index >= count {
            return Err(ArgumentError::NoSuchShard {
                spec: owned(),
                k: u64::from(index) + 1,
                n: count,
            });
        }
        Ok(Shard { index, count })
    }

    /// Whether the module named `name` with debug id `id` is this shard's. The id is
    /// compared as the store writes it (upper case), the name as given.
    pub fn takes(&self, name: &str, id: &str) -> bool {
        let key = format!("{name}/{}", id.to_ascii_uppercase());
        // xxh3 is specified to the bit, so every machine and version partitions alike.
        xxhash_rust::xxh3::xxh3_64(key.as_bytes()) % u64::from(self.count) == u64::from(self.index)
    }
}

/// `K/N` (K from 1 to N) or `auto/N` (K is `$JOB_COMPLETION_INDEX` + 1).
impl std::str::FromStr for Shard {
    type Err = ArgumentError;
    fn from_str(spec: &str) -> Result<Shard, ArgumentError> {
        Shard::parse(spec)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index + 1, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_k_of_n_and_auto() {
        let s = |spec, var| Shard::parse_with(spec, var);
        assert_eq!(s("2/3", None), Ok(Shard { index: 1, count: 3 }));
        assert_eq!(s("auto/3", Some("0")), Ok(Shard { index: 0, count: 3 }));
        assert_eq!(s("auto/3", Some("2")).unwrap().to_string(), "3/3");
        for bad in ["0/3", "4/3", "1/0", "x/2", "3", "auto/2"] {
            assert!(s(bad, None).is_err(), "{bad}");
        }
        assert_eq!(
            s("auto/2", Some("2")),
            Err(ArgumentError::NoSuchShard {
                spec: "auto/2".into(),
                k: 3,
                n: 2
            })
        );
        assert_eq!(
            s("auto/2", Some("x")).unwrap_err().to_string(),
            "\"auto/2\": JOB_COMPLETION_INDEX=\"x\" is not a whole number"
        );
    }

    #[test]
    fn every_module_is_in_exactly_one_shard_and_shards_are_even() {
        let shards: Vec<Shard> = (1..=4)
            .map(|k| Shard::parse_with(&format!("{k}/4"), None).unwrap())
            .collect();
        let mut sizes = [0usize; 4];
        for i in 0..4000 {
            let name = format!("lib{i}.so");
            let id = format!("{i:032X}0");
            let owners: Vec<usize> = (0..4).filter(|&k| shards[k].takes(&name, &id)).collect();
            assert_eq!(owners.len(), 1);
            sizes[owners[0]] += 1;
            // Case of the id does not move a module.
            assert!(shards[owners[0]].takes(&name, &id.to_lowercase()));
        }
        assert!(sizes.iter().all(|&n| (850..1150).contains(&n)), "{sizes:?}");
        // Pinned, so that a change of hash (which would move modules between the
        // shards of jobs already running) fails here first.
        let of = |name: &str, id: &str| (0..4).find(|&k| shards[k].takes(name, id));
        assert_eq!(
            of("ntdll.pdb", "1EB9FACB04EA273BB4BA52C8D8A7D7DD1"),
            Some(3)
        );
        assert_eq!(
            of("libc.so.6", "9670EA4A3BA4E6F4E9F3A6C4D7E1A9B40"),
            Some(2)
        );
    }
}
