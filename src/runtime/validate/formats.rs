//! String formats the schemas lcp emits carry, checked as the Python side reads
//! them: `date`, `date-time`, `time`, `duration` and `uuid` as `host.py` converts
//! them; `email`, `uri`, `ipv4` and `ipv6` as pydantic checks `EmailStr`, `AnyUrl`
//! (strict: a URL the WHATWG parser has to repair is refused) and the `ipaddress`
//! types. An unknown format is not checked. Never runs Python.

use std::net::{Ipv4Addr, Ipv6Addr};

/// What `text` should look like when it is not a valid `format`; `None` when it is,
/// or when the format is not one lcp checks.
pub fn check(format: &str, text: &str) -> Option<&'static str> {
    let (valid, expected) = match format {
        "date" => (is_date(text), "YYYY-MM-DD"),
        "date-time" => (is_date_time(text), "YYYY-MM-DDTHH:MM:SS, optionally with a time zone"),
        "time" => (is_time(text), "HH:MM:SS, optionally with a time zone"),
        "duration" => (is_duration(text), "an ISO 8601 duration such as P1DT2H30M"),
        "uuid" => (is_uuid(text), "8-4-4-4-12 hexadecimal digits"),
        "email" => (is_email(text), "an address such as someone@example.com"),
        "uri" => (is_uri(text), "an absolute URL such as https://example.com/"),
        "ipv4" => (is_ipv4(text), "four numbers from 0 to 255 such as 192.0.2.1"),
        "ipv6" => (is_ipv6(text), "an IPv6 address such as 2001:db8::1"),
        _ => return None,
    };
    (!valid).then_some(expected)
}

fn digits(text: &str, count: usize) -> Option<(u32, &str)> {
    let head = text.get(..count)?;
    if !head.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((head.parse().ok()?, &text[count..]))
}

/// `YYYY-MM-DD`, a real calendar day.
fn is_date(text: &str) -> bool {
    date_prefix(text).is_some_and(str::is_empty)
}

fn date_prefix(text: &str) -> Option<&str> {
    let (year, rest) = digits(text, 4)?;
    let (month, rest) = digits(rest.strip_prefix('-')?, 2)?;
    let (day, rest) = digits(rest.strip_prefix('-')?, 2)?;
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    (1..=days).contains(&day).then_some(rest)
}

/// `HH:MM[:SS[.fraction]]` with an optional `Z` or `±HH:MM` (what Python's
/// `fromisoformat` reads; RFC 3339 would demand the seconds and the offset).
fn is_time(text: &str) -> bool {
    let Some((hour, rest)) = digits(text, 2) else { return false };
    let Some((minute, mut rest)) = rest.strip_prefix(':').and_then(|r| digits(r, 2)) else { return false };
    if let Some((second, after)) = rest.strip_prefix(':').and_then(|r| digits(r, 2)) {
        if second > 60 {
            return false;
        }
        rest = after;
        if let Some(fraction) = rest.strip_prefix(['.', ',']) {
            let count = fraction.bytes().take_while(u8::is_ascii_digit).count();
            if count == 0 {
                return false;
            }
            rest = &fraction[count..];
        }
    }
    hour < 24 && minute < 60 && is_offset(rest)
}

fn is_offset(text: &str) -> bool {
    if text.is_empty() || text == "Z" || text == "z" {
        return true;
    }
    let Some(rest) = text.strip_prefix(['+', '-']) else { return false };
    let Some((hours, rest)) = digits(rest, 2) else { return false };
    let rest = rest.strip_prefix(':').unwrap_or(rest);
    matches!(digits(rest, 2), Some((minutes, "")) if hours < 24 && minutes < 60)
}

/// A date, `T` (or a space), a time.
fn is_date_time(text: &str) -> bool {
    date_prefix(text).and_then(|rest| rest.strip_prefix(['T', 't', ' '])).is_some_and(is_time)
}

/// `P[nW][nD][T[nH][nM][nS]]` with at least one part.
fn is_duration(text: &str) -> bool {
    let Some(rest) = text.strip_prefix('-').unwrap_or(text).strip_prefix('P') else { return false };
    let (date, time) = match rest.split_once('T') {
        Some((date, time)) if !time.is_empty() => (date, Some(time)),
        Some(_) => return false,
        None => (rest, None),
    };
    let parts_ok = |mut text: &str, units: &[char]| -> Option<usize> {
        let mut count = 0;
        let mut allowed = units;
        while !text.is_empty() {
            let number = text.bytes().take_while(|b| b.is_ascii_digit() || *b == b'.' || *b == b',').count();
            let unit = text[number..].chars().next()?;
            let position = allowed.iter().position(|u| *u == unit)?;
            if number == 0 {
                return None;
            }
            allowed = &allowed[position + 1..];
            text = &text[number + unit.len_utf8()..];
            count += 1;
        }
        Some(count)
    };
    let Some(date_parts) = parts_ok(date, &['W', 'D']) else { return false };
    let time_parts = match time {
        Some(time) => match parts_ok(time, &['H', 'M', 'S']) {
            Some(count) => count,
            None => return false,
        },
        None => 0,
    };
    date_parts + time_parts > 0
}

fn is_uuid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(group, len)| group.len() == len && group.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Python's `ipaddress.IPv4Address`: four decimal parts without leading zeros.
fn is_ipv4(text: &str) -> bool {
    // Rust's parser refuses leading zeros too; it is stricter only about nothing else.
    text.parse::<Ipv4Addr>().is_ok()
}

/// Python's `ipaddress.IPv6Address`, a `%zone` suffix included.
fn is_ipv6(text: &str) -> bool {
    let address = match text.split_once('%') {
        Some((address, zone)) if !zone.is_empty() && !zone.contains('%') => address,
        Some(_) => return false,
        None => text,
    };
    address.parse::<Ipv6Addr>().is_ok()
}

/// A URL as pydantic's `AnyUrl` reads it in strict mode: the WHATWG parser accepts
/// it without repairing anything (credentials in the URL are allowed).
fn is_uri(text: &str) -> bool {
    use std::cell::Cell;
    let repaired = Cell::new(false);
    let violation = |v: url::SyntaxViolation| {
        if v != url::SyntaxViolation::EmbeddedCredentials {
            repaired.set(true);
        }
    };
    let parsed = url::Url::options().syntax_violation_callback(Some(&violation)).parse(text);
    parsed.is_ok() && !repaired.get()
}

/// Longest text pydantic reads as an email address.
const MAX_EMAIL_INPUT: usize = 2048;

/// An address as pydantic's `EmailStr` reads it: an optional display name with the
/// address in angle brackets, spaces around it ignored, then `email-validator`'s
/// syntax without deliverability: a dot-atom local part (non-ASCII allowed, no
/// quotes), a domain name with a dot, ending in a letter, not a special-use name, no
/// IP literal, and the RFC length limits.
fn is_email(text: &str) -> bool {
    if text.chars().count() > MAX_EMAIL_INPUT || text.contains(['\r', '\n']) {
        return false;
    }
    let address = match display_form(text) {
        Some(inner) => inner,
        None if text.contains(['<', '>']) => return false,
        None => text,
    };
    let address = address.trim();
    let Some((local, domain)) = address.split_once('@') else { return false };
    let Some(ascii_domain) = email_domain(domain) else { return false };
    if !is_local_part(local) {
        return false;
    }
    // 254 octets, as written and with the domain in its ASCII form.
    local.len() + 1 + domain.len().max(ascii_domain.len()) <= 254
}

/// `Name <address>` or `"Name" <address>` (pydantic's `pretty_email_regex`): the
/// address; `None` when the text is not of that form.
fn display_form(text: &str) -> Option<&str> {
    let open = text.find('<')?;
    let rest = text[open + 1..].trim_end();
    let inner = rest.strip_suffix('>')?;
    if inner.is_empty() {
        return None;
    }
    let name = text[..open].trim();
    let is_name_char = |c: char| c.is_alphanumeric() || "_.!#$%&'*+-/=?^`{|}~".contains(c);
    let quoted = name.len() >= 3 && name.starts_with('"') && name.ends_with('"');
    let plain = name.split_whitespace().all(|word| word.chars().all(is_name_char));
    (name.is_empty() || quoted || plain).then_some(inner)
}

/// `email-validator`'s dot-atom local part, internationalized.
fn is_local_part(local: &str) -> bool {
    const ATEXT: &str = "!#$%&'*+-/=?^_`{|}~";
    let char_ok = |c: char| {
        c.is_ascii_alphanumeric() || ATEXT.contains(c) || (!c.is_ascii() && !c.is_whitespace() && !c.is_control())
    };
    !local.is_empty() && local.split('.').all(|atom| !atom.is_empty() && atom.chars().all(char_ok))
}

/// Domains `email-validator` refuses for email (RFC 6761 and its successors).
const SPECIAL_USE_DOMAINS: &[&str] = &["arpa", "invalid", "local", "localhost", "onion", "test"];

/// The ASCII form of an email domain `email-validator` accepts, else `None`.
fn email_domain(domain: &str) -> Option<String> {
    if domain.is_empty() || domain.chars().count() > 253 {
        return None;
    }
    // A bracketed IP address is refused by default, like any other character.
    let char_ok = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '.' || !c.is_ascii();
    if !domain.chars().all(|c| char_ok(c) && !c.is_whitespace() && !c.is_control()) {
        return None;
    }
    let ascii =
        if domain.is_ascii() { domain.to_ascii_lowercase() } else { url::Host::parse(domain).ok()?.to_string() };
    if ascii.starts_with(['.', '-'])
        || ascii.ends_with(['.', '-'])
        || ascii.contains("..")
        || ascii.contains(".-")
        || ascii.contains("-.")
        || ascii.len() > 253
    {
        return None;
    }
    for label in ascii.split('.') {
        let hyphens_at_3 = label.get(2..4) == Some("--") && !label.starts_with("xn");
        let shape = label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        if hyphens_at_3 || !shape || label.len() > 63 {
            return None;
        }
    }
    if !ascii.contains('.') || !ascii.ends_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    let special = SPECIAL_USE_DOMAINS.iter().any(|d| ascii == *d || ascii.ends_with(&format!(".{d}")));
    (!special).then_some(ascii)
}
