//! `uuid` values: 128 bits, read in PostgreSQL's accepted text forms and written in its
//! one output form (lower-case hex, hyphens after 8, 12, 16 and 20 digits).

/// Parses PostgreSQL's `uuid` input: 32 hex digits, optionally inside braces, with a
/// hyphen allowed after any group of four digits (`a0eebc99-9c0b-4ef8-...`,
/// `{a0eebc999c0b4ef8bb6d6bb9bd380a11}`, `a0ee-bc99-...`). `None` when it is not one.
pub fn parse_uuid(text: &str) -> Option<u128> {
    let t = text.trim();
    let t = match t.strip_prefix('{') {
        Some(inner) => inner.strip_suffix('}')?,
        None => t,
    };
    let mut value: u128 = 0;
    let mut digits = 0;
    let mut last_hyphen = true;
    for c in t.chars() {
        if c == '-' {
            // PostgreSQL allows one after each group of four digits, never two in a row
            // or at the start or the end.
            if last_hyphen || digits % 4 != 0 || digits == 32 {
                return None;
            }
            last_hyphen = true;
            continue;
        }
        let d = c.to_digit(16)?;
        if digits == 32 {
            return None;
        }
        value = (value << 4) | d as u128;
        digits += 1;
        last_hyphen = false;
    }
    (digits == 32 && !last_hyphen).then_some(value)
}

/// A uuid in PostgreSQL's output form.
pub fn uuid_text(u: u128) -> String {
    let h = format!("{u:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A version 4 (random) uuid made of `random` bits, its version and variant bits set as
/// RFC 4122 has them (what `gen_random_uuid()` gives).
pub fn uuid_v4(random: u128) -> u128 {
    (random & !(0xF << 76) & !(0x3 << 62)) | (0x4 << 76) | (0x2 << 62)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgresql_input_forms_read_alike() {
        let want = parse_uuid("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11").unwrap();
        for form in [
            "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
            "{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}",
        ] {
            assert_eq!(parse_uuid(form), Some(want), "{form}");
        }
        assert_eq!(uuid_text(want), "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
    }

    #[test]
    fn malformed_input_is_refused() {
        for bad in [
            "",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111",
            "-a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-",
            "a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eeb-c999c0b4ef8bb6d6bb9bd380a11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        ] {
            assert_eq!(parse_uuid(bad), None, "{bad}");
        }
    }

    #[test]
    fn version_4_bits_are_set() {
        let u = uuid_text(uuid_v4(u128::MAX));
        assert_eq!(u, "ffffffff-ffff-4fff-bfff-ffffffffffff");
        let u = uuid_text(uuid_v4(0));
        assert_eq!(u, "00000000-0000-4000-8000-000000000000");
    }
}
