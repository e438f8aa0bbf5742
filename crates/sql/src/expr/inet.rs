//! The network-address functions and operators (`inet`, `cidr`: permafrost_types::inet).

use permafrost_types::{Inet, Value, ValueRef};

use super::datum::Datum;
use crate::error::{Result, SqlError};

/// A function or operator over addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InetFn {
    /// `host(x)`: the address as text.
    Host,
    /// `text(x)`: the address and its length as text.
    Text,
    /// `abbrev(x)`: the text form, as for output.
    Abbrev,
    Masklen,
    /// `family(x)`: 4 or 6.
    Family,
    Network,
    Broadcast,
    Netmask,
    Hostmask,
    /// `set_masklen(x, n)`.
    SetMasklen,
    /// `a << b` (`or_equal`: `<<=`): `a` is within network `b`.
    Within {
        or_equal: bool,
    },
    /// `a >> b` (`or_equal`: `>>=`): `a` contains network `b`.
    Contains {
        or_equal: bool,
    },
    /// `a && b`: either contains or equals the other.
    Overlaps,
}

/// PostgreSQL's name of each function (the operators have none).
pub const INET_FUNCTIONS: &[(&str, InetFn)] = &[
    ("host", InetFn::Host),
    ("abbrev", InetFn::Abbrev),
    ("masklen", InetFn::Masklen),
    ("family", InetFn::Family),
    ("network", InetFn::Network),
    ("broadcast", InetFn::Broadcast),
    ("netmask", InetFn::Netmask),
    ("hostmask", InetFn::Hostmask),
    ("set_masklen", InetFn::SetMasklen),
];

fn address(v: ValueRef<'_>) -> Result<Inet> {
    match v {
        ValueRef::Inet(x) => Ok(x),
        other => Err(SqlError::Type(format!(
            "an inet value was expected, not {}",
            other.kind_name()
        ))),
    }
}

/// Applies `f` to non-NULL arguments, of the types the binder checked.
pub(super) fn eval(f: InetFn, v: &[Datum<'_>]) -> Result<Value> {
    let x = address(v[0].as_ref())?;
    let y = || address(v[1].as_ref());
    Ok(match f {
        InetFn::Host => Value::text(x.host()),
        InetFn::Text => Value::text(x.with_length()),
        InetFn::Abbrev => Value::text(x.to_string()),
        InetFn::Masklen => Value::Int(x.bits.into()),
        InetFn::Family => Value::Int(if x.v6 { 6 } else { 4 }),
        InetFn::Network => Value::Inet(x.network()),
        InetFn::Broadcast => Value::Inet(x.broadcast()),
        InetFn::Netmask => Value::Inet(x.mask(false)),
        InetFn::Hostmask => Value::Inet(x.mask(true)),
        InetFn::SetMasklen => {
            let n = v[1].as_ref().as_i64().unwrap_or(-1);
            let bits = u8::try_from(n).ok().and_then(|b| x.with_bits(b));
            Value::Inet(bits.ok_or_else(|| SqlError::InvalidArgument(format!("invalid mask length: {n}")))?)
        }
        InetFn::Within { or_equal } => Value::Bool(x.within(&y()?, or_equal)),
        InetFn::Contains { or_equal } => Value::Bool(y()?.within(&x, or_equal)),
        InetFn::Overlaps => Value::Bool(x.overlaps(&y()?)),
    })
}
