//! Network addresses (`inet`, `cidr`): IPv4 and IPv6 addresses with a netmask length, read,
//! written, compared and tested for containment as PostgreSQL does.

use std::cmp::Ordering;
use std::net::{Ipv4Addr, Ipv6Addr};

/// An address and its netmask length. IPv4 addresses sit in the first 4 bytes of `addr`
/// (the rest zero). `cidr` says the value is of type cidr (a network: no bits set past the
/// mask, always written with its length); it does not take part in comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Inet {
    pub v6: bool,
    pub bits: u8,
    pub cidr: bool,
    pub addr: [u8; 16],
}

/// Why text is not an address (`cidr`: the value has bits set past its mask).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum InetError {
    Syntax,
    HostBits,
}

impl Inet {
    /// The number of address bits: 32 or 128.
    pub fn max_bits(&self) -> u8 {
        if self.v6 { 128 } else { 32 }
    }

    fn len(&self) -> usize {
        if self.v6 { 16 } else { 4 }
    }

    /// Bit `i` (0 the highest) of the address.
    fn bit(&self, i: u8) -> bool {
        self.addr[i as usize / 8] & (0x80 >> (i % 8)) != 0
    }

    /// The address with every bit past the first `bits` set to `ones`.
    fn fill_host(&self, bits: u8, ones: bool) -> [u8; 16] {
        let mut a = self.addr;
        for (i, byte) in a.iter_mut().enumerate().take(self.len()) {
            let first = (i * 8) as u32;
            let keep = (bits as u32).saturating_sub(first).min(8);
            let mask = if keep == 0 { 0u8 } else { 0xFFu8 << (8 - keep) };
            *byte = if ones { *byte | !mask } else { *byte & mask };
        }
        a
    }

    /// Reads `inet` (`cidr` false) or `cidr` text.
    pub fn parse(text: &str, cidr: bool) -> Result<Inet, InetError> {
        let t = text.trim();
        let (addr, bits) = match t.split_once('/') {
            Some((a, b)) => {
                let b: u8 = b.trim().parse().map_err(|_| InetError::Syntax)?;
                (a.trim(), Some(b))
            }
            None => (t, None),
        };
        let mut v = if addr.contains(':') {
            let a: Ipv6Addr = addr.parse().map_err(|_| InetError::Syntax)?;
            let bits = bits.unwrap_or(128);
            if bits > 128 {
                return Err(InetError::Syntax);
            }
            Inet {
                v6: true,
                bits,
                cidr,
                addr: a.octets(),
            }
        } else {
            ipv4(addr, bits, cidr)?
        };
        if cidr {
            if v.fill_host(v.bits, false) != v.addr {
                return Err(InetError::HostBits);
            }
        } else {
            v.cidr = false;
        }
        Ok(v)
    }

    /// The address alone (`host()`).
    pub fn host(&self) -> String {
        if self.v6 {
            Ipv6Addr::from(self.addr).to_string()
        } else {
            Ipv4Addr::new(self.addr[0], self.addr[1], self.addr[2], self.addr[3]).to_string()
        }
    }

    /// The text with the length always (`text(inet)`).
    pub fn with_length(&self) -> String {
        format!("{}/{}", self.host(), self.bits)
    }

    /// The network: the address with the bits past the mask cleared, as cidr (`network()`).
    pub fn network(&self) -> Inet {
        Inet {
            addr: self.fill_host(self.bits, false),
            cidr: true,
            ..*self
        }
    }

    /// The broadcast address: the bits past the mask set (`broadcast()`).
    pub fn broadcast(&self) -> Inet {
        Inet {
            addr: self.fill_host(self.bits, true),
            cidr: false,
            ..*self
        }
    }

    /// The netmask as an address (`netmask()`); `host_mask`: its complement (`hostmask()`).
    pub fn mask(&self, host_mask: bool) -> Inet {
        let ones = Inet {
            addr: [0xFF; 16],
            ..*self
        };
        let mut addr = ones.fill_host(self.bits, false);
        if host_mask {
            for b in addr.iter_mut().take(self.len()) {
                *b = !*b;
            }
        }
        Inet {
            addr,
            bits: self.max_bits(),
            cidr: false,
            v6: self.v6,
        }
    }

    /// The value as type inet (`cidr: false`) or cidr (the bits past the mask cleared).
    pub fn as_type(&self, cidr: bool) -> Inet {
        if cidr {
            self.network()
        } else {
            Inet { cidr: false, ..*self }
        }
    }

    /// The value with netmask length `bits` (`set_masklen`), if that fits its family.
    pub fn with_bits(&self, bits: u8) -> Option<Inet> {
        (bits <= self.max_bits()).then(|| {
            let v = Inet { bits, ..*self };
            if self.cidr { v.network() } else { v }
        })
    }

    /// PostgreSQL's order: IPv4 before IPv6; then the bits both masks cover; then the
    /// shorter mask first; then the whole address.
    pub fn compare(&self, other: &Inet) -> Ordering {
        self.v6
            .cmp(&other.v6)
            .then_with(|| self.prefix_cmp(other, self.bits.min(other.bits)))
            .then_with(|| self.bits.cmp(&other.bits))
            .then_with(|| self.addr.cmp(&other.addr))
    }

    fn prefix_cmp(&self, other: &Inet, bits: u8) -> Ordering {
        (0..bits)
            .map(|i| self.bit(i).cmp(&other.bit(i)))
            .find(|o| *o != Ordering::Equal)
            .unwrap_or(Ordering::Equal)
    }

    /// Whether `self` is within network `other` (`<<`; `or_equal`: `<<=`).
    pub fn within(&self, other: &Inet, or_equal: bool) -> bool {
        self.v6 == other.v6
            && (if or_equal {
                self.bits >= other.bits
            } else {
                self.bits > other.bits
            })
            && self.prefix_cmp(other, other.bits) == Ordering::Equal
    }

    /// Whether either contains or equals the other (`&&`).
    pub fn overlaps(&self, other: &Inet) -> bool {
        self.v6 == other.v6 && self.prefix_cmp(other, self.bits.min(other.bits)) == Ordering::Equal
    }

    /// PostgreSQL's binary form (inet_send): family (2 IPv4, 3 IPv6), netmask length,
    /// cidr (0 or 1), the address's byte count, the address.
    pub fn to_pg_binary(&self) -> Vec<u8> {
        let mut out = vec![
            if self.v6 { 3 } else { 2 },
            self.bits,
            self.cidr as u8,
            self.len() as u8,
        ];
        out.extend_from_slice(&self.addr[..self.len()]);
        out
    }

    /// Reads PostgreSQL's binary form as type inet (`cidr` false) or cidr.
    pub fn from_pg_binary(b: &[u8], cidr: bool) -> Result<Inet, InetError> {
        let (v6, n) = match b.first() {
            Some(2) => (false, 4),
            Some(3) => (true, 16),
            _ => return Err(InetError::Syntax),
        };
        if b.len() != 4 + n || b[3] as usize != n || b[1] > if v6 { 128 } else { 32 } {
            return Err(InetError::Syntax);
        }
        let mut addr = [0u8; 16];
        addr[..n].copy_from_slice(&b[4..]);
        let v = Inet {
            v6,
            bits: b[1],
            cidr,
            addr,
        };
        if cidr && v.network().addr != v.addr {
            return Err(InetError::HostBits);
        }
        Ok(v)
    }

    /// Bytes that sort as [`Inet::compare`] orders (an index key): the family, the address
    /// with the bits past the mask cleared, the mask length, the whole address.
    pub fn key(&self) -> [u8; 34] {
        let mut k = [0u8; 34];
        k[0] = self.v6 as u8;
        k[1..17].copy_from_slice(&self.fill_host(self.bits, false));
        k[17] = self.bits;
        k[18..34].copy_from_slice(&self.addr);
        k
    }
}

impl std::fmt::Display for Inet {
    /// An inet without its length when the mask covers the whole address; a cidr always
    /// with it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.cidr && self.bits == self.max_bits() {
            f.write_str(&self.host())
        } else {
            f.write_str(&self.with_length())
        }
    }
}

/// An IPv4 address: four octets, or (a network) fewer with the length implied as
/// PostgreSQL implies it (by class, widened to the octets given).
fn ipv4(addr: &str, bits: Option<u8>, cidr: bool) -> Result<Inet, InetError> {
    let parts: Vec<&str> = addr.split('.').collect();
    if parts.is_empty() || parts.len() > 4 || (parts.len() < 4 && !cidr && bits.is_none()) {
        return Err(InetError::Syntax);
    }
    let mut a = [0u8; 16];
    for (i, p) in parts.iter().enumerate() {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            return Err(InetError::Syntax);
        }
        a[i] = p.parse().map_err(|_| InetError::Syntax)?;
    }
    let given = (parts.len() * 8) as u8;
    let bits = match bits {
        Some(b) if b > 32 => return Err(InetError::Syntax),
        Some(b) => b,
        None if parts.len() == 4 => 32,
        None => {
            let class = match a[0] {
                240.. => 32,
                224.. => 8,
                192.. => 24,
                128.. => 16,
                _ => 8,
            };
            let b = class.max(given);
            if b == 8 && a[0] == 224 { 4 } else { b }
        }
    };
    Ok(Inet {
        v6: false,
        bits,
        cidr,
        addr: a,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inet(s: &str) -> Inet {
        Inet::parse(s, false).unwrap()
    }

    fn cidr(s: &str) -> Inet {
        Inet::parse(s, true).unwrap()
    }

    #[test]
    fn text_in_and_out() {
        assert_eq!(inet("192.168.1.5").to_string(), "192.168.1.5");
        assert_eq!(inet("192.168.1.5/24").to_string(), "192.168.1.5/24");
        assert_eq!(cidr("192.168.1.0/24").to_string(), "192.168.1.0/24");
        assert_eq!(cidr("10").to_string(), "10.0.0.0/8");
        assert_eq!(cidr("128.1").to_string(), "128.1.0.0/16");
        assert_eq!(cidr("192.168.1").to_string(), "192.168.1.0/24");
        assert_eq!(cidr("10.1.2.3").to_string(), "10.1.2.3/32");
        assert_eq!(inet("2001:DB8::1").to_string(), "2001:db8::1");
        assert_eq!(inet("::ffff:1.2.3.4/120").to_string(), "::ffff:1.2.3.4/120");
        assert_eq!(Inet::parse("192.168.1.5/24", true), Err(InetError::HostBits));
        for bad in ["1.2.3", "1.2.3.256", "1.2.3.4/33", "x", "", "1::2::3", "::1/129"] {
            assert_eq!(Inet::parse(bad, false), Err(InetError::Syntax), "{bad}");
        }
    }

    #[test]
    fn order_containment_and_keys_agree() {
        let vals = [
            "10.0.0.0/8",
            "10.1.0.0/16",
            "10.2.3.4/8",
            "10.1.2.3",
            "9.255.255.255",
            "192.168.0.0/16",
            "::1",
            "2001:db8::/32",
        ];
        for a in vals {
            for b in vals {
                let (x, y) = (inet(a), inet(b));
                assert_eq!(x.key().cmp(&y.key()), x.compare(&y), "{a} {b}");
            }
        }
        assert!(inet("10.1.2.3").within(&cidr("10.0.0.0/8"), false));
        assert!(!cidr("10.0.0.0/8").within(&cidr("10.0.0.0/8"), false));
        assert!(cidr("10.0.0.0/8").within(&cidr("10.0.0.0/8"), true));
        assert!(inet("10.1.2.3/24").overlaps(&cidr("10.1.0.0/16")));
        assert_eq!(inet("192.168.1.5/24").network().to_string(), "192.168.1.0/24");
        assert_eq!(inet("192.168.1.5/24").broadcast().to_string(), "192.168.1.255/24");
        assert_eq!(inet("192.168.1.5/20").mask(false).to_string(), "255.255.240.0");
        assert_eq!(inet("192.168.1.5/20").mask(true).to_string(), "0.0.15.255");
    }
}
