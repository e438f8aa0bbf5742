//! What evaluating an [`super::Expr`] gives: a value borrowed when possible ([`Datum`]),
//! which the text functions (text.rs) take too.

use permafrost_types::{Value, ValueRef};

/// A value that is borrowed when possible.
pub enum Datum<'a> {
    Ref(ValueRef<'a>),
    Owned(Value),
}

impl Datum<'_> {
    #[inline]
    pub fn as_ref(&self) -> ValueRef<'_> {
        match self {
            Datum::Ref(v) => *v,
            Datum::Owned(v) => v.as_ref(),
        }
    }

    pub fn into_value(self) -> Value {
        match self {
            Datum::Ref(v) => v.to_owned(),
            Datum::Owned(v) => v,
        }
    }

    pub(crate) fn is_null(&self) -> bool {
        self.as_ref().is_null()
    }
}
