//! LZO1X decompression, for squashfs images compressed with LZO (the Firefox snap and
//! others that favour start-up time).
//!
//! Hand-written: the Rust LZO crates either bind the C library (`minilzo-rs`,
//! `rust-lzo`, a C2Rust translation) or are one-release ports doing their work through
//! raw pointers (`lzokay-native`); the decoder is a few instructions over a byte
//! stream, each bounds-checked here. The instruction set is LZO1X's as the Linux
//! kernel's `lzo1x_decompress_safe` documents it (Documentation/staging/lzo.rst).

use std::io;

fn damaged(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("LZO data damaged: {what}"),
    )
}

/// The decoder's position in its input and output.
struct Lzo<'a, 'o> {
    input: &'a [u8],
    ip: usize,
    out: &'o mut [u8],
    op: usize,
}

impl Lzo<'_, '_> {
    fn byte(&mut self) -> io::Result<usize> {
        let b = *self
            .input
            .get(self.ip)
            .ok_or_else(|| damaged("it ends inside an instruction"))?;
        self.ip += 1;
        Ok(usize::from(b))
    }

    fn le16(&mut self) -> io::Result<usize> {
        Ok(self.byte()? | (self.byte()? << 8))
    }

    /// A run length continued in zero bytes (each 255 more) and a final byte.
    fn long_length(&mut self, base: usize) -> io::Result<usize> {
        let mut t = base;
        loop {
            match self.byte()? {
                0 => {
                    t = t
                        .checked_add(255)
                        .filter(|&t| t <= self.out.len())
                        .ok_or_else(|| damaged("a run longer than the block"))?;
                }
                b => return Ok(t + b),
            }
        }
    }

    fn literals(&mut self, n: usize) -> io::Result<()> {
        let from = self
            .input
            .get(self.ip..self.ip.saturating_add(n))
            .ok_or_else(|| damaged("literals past its end"))?;
        let to = self
            .out
            .get_mut(self.op..self.op.saturating_add(n))
            .ok_or_else(|| damaged("literals past the block's end"))?;
        to.copy_from_slice(from);
        self.ip += n;
        self.op += n;
        Ok(())
    }

    /// Copies `len` bytes from `distance` back (byte by byte: a match may overlap
    /// itself, repeating a short pattern).
    fn copy_match(&mut self, distance: usize, len: usize) -> io::Result<()> {
        if distance == 0 || distance > self.op {
            return Err(damaged("a match reaching before the block's start"));
        }
        if self.op.saturating_add(len) > self.out.len() {
            return Err(damaged("a match past the block's end"));
        }
        for _ in 0..len {
            self.out[self.op] = self.out[self.op - distance];
            self.op += 1;
        }
        Ok(())
    }
}

/// Decompresses the LZO1X stream `input` into `out`: the bytes written. Damage, or
/// output that would not fit in `out`, is an error.
pub(super) fn decompress(input: &[u8], out: &mut [u8]) -> io::Result<usize> {
    let mut z = Lzo {
        input,
        ip: 0,
        out,
        op: 0,
    };
    // 0: the last instruction copied no literals; 1-3: it copied that many; 4: it was
    // a literal run of four or more.
    let mut state = 0usize;
    if input.first().is_some_and(|&b| b > 17) {
        let t = z.byte()? - 17;
        z.literals(t)?;
        state = if t < 4 { t } else { 4 };
    }
    loop {
        let t = z.byte()?;
        let (distance, len, next);
        if t < 16 {
            match state {
                0 => {
                    let run = match t {
                        0 => z.long_length(15)?,
                        t => t,
                    };
                    z.literals(run + 3)?;
                    state = 4;
                    continue;
                }
                1..=3 => {
                    next = t & 3;
                    distance = 1 + (t >> 2) + (z.byte()? << 2);
                    len = 2;
                }
                _ => {
                    next = t & 3;
                    distance = 1 + 0x0800 + (t >> 2) + (z.byte()? << 2);
                    len = 3;
                }
            }
        } else if t >= 64 {
            next = t & 3;
            distance = 1 + ((t >> 2) & 7) + (z.byte()? << 3);
            len = (t >> 5) + 1;
        } else if t >= 32 {
            len = match t & 31 {
                0 => z.long_length(31)?,
                n => n,
            } + 2;
            let word = z.le16()?;
            distance = 1 + (word >> 2);
            next = word & 3;
        } else {
            // 16..=31: a far match, or the end of the stream.
            len = match t & 7 {
                0 => z.long_length(7)?,
                n => n,
            } + 2;
            let word = z.le16()?;
            let far = ((t & 8) << 11) + (word >> 2);
            if far == 0 {
                if len != 3 {
                    return Err(damaged("an end marker of the wrong length"));
                }
                return Ok(z.op);
            }
            distance = far + 0x4000;
            next = word & 3;
        }
        z.copy_match(distance, len)?;
        z.literals(next)?;
        state = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream as `lzop`'s LZO1X-1 writes one for "abcabcabcabcabcabc\n" ×3: an
    /// initial literal run, an overlapping match, the end marker.
    #[test]
    fn literals_matches_and_the_end() {
        // Initial literals "abc" (3 + 17 = 20), then an M2 match of 15 at distance 3
        // is not encodable in M2 (length ≤ 8): an M3 (t = 32 | (15 - 2)) at distance
        // 3 (word (3 - 1) << 2), no trailing literals, then the end marker.
        let stream = [20, b'a', b'b', b'c', 32 | 13, 2 << 2, 0, 17, 0, 0];
        let mut out = [0u8; 64];
        let n = decompress(&stream, &mut out).unwrap();
        assert_eq!(&out[..n], b"abcabcabcabcabcabc");
    }

    #[test]
    fn damage_is_refused() {
        let mut out = [0u8; 8];
        // A match before the start.
        assert!(decompress(&[20, b'a', b'b', b'c', 32 | 13, 40, 0], &mut out).is_err());
        // Literals past the output.
        assert!(decompress(&[30, 0, 0, 0], &mut out).is_err());
        // Cut inside an instruction; an empty stream.
        assert!(decompress(&[20, b'a', b'b', b'c', 32], &mut out).is_err());
        assert!(decompress(&[], &mut out).is_err());
        // A long run of zero-length bytes, bounded by the output.
        let mut zeros = vec![0u8; 1000];
        zeros.insert(0, 0);
        assert!(decompress(&zeros, &mut out).is_err());
    }
}
