//! Test-only: the seeded byte mutations the differential tests share (a body, changed a few
//! bytes at a time, held against a reference reader).

/// A xorshift64 generator and the edits it draws.
pub struct Mutator {
    seed: u64,
}

impl Mutator {
    /// A generator that starts from `seed` (not 0: xorshift stays at 0).
    pub fn new(seed: u64) -> Self {
        Mutator { seed }
    }

    /// The next pseudo-random word.
    pub fn next(&mut self) -> u64 {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        self.seed
    }

    /// `base` with `least` to `least + 2` edits, each replacing, inserting or deleting one
    /// byte (drawn from `alphabet`) at a random place.
    pub fn mutated(&mut self, base: &[u8], least: u64, alphabet: &[u8]) -> Vec<u8> {
        let mut v = base.to_vec();
        for _ in 0..(least + self.next() % 3) {
            let r = self.next();
            let pos = (r as usize >> 8) % (v.len() + 1);
            let byte = alphabet[(r as usize >> 40) % alphabet.len()];
            match r % 3 {
                0 if pos < v.len() => v[pos] = byte,
                1 => v.insert(pos, byte),
                _ if pos < v.len() => {
                    v.remove(pos);
                }
                _ => v.push(byte),
            }
        }
        v
    }
}
