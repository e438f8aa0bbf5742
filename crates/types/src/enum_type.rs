//! Enum types (`CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')`): their definitions and
//! values.
//!
//! A definition ([`EnumType`]) is immutable: `ALTER TYPE` makes a new version with the same
//! id, and the catalog hands it to every column of the type. Versions only grow, so a
//! label's index (its place in the order labels were added) and its sort position never
//! change: rows store the index (4 bytes), indexes key on the sort position, and values of
//! an older version still read, print and compare right.
//!
//! Definitions live as long as the process (`&'static`, so that [`crate::DataType`] stays
//! `Copy` and a value can print itself): one small allocation per `CREATE TYPE` or `ALTER
//! TYPE`, which schema changes never make often. Each also gets a process-wide serial
//! number, by which rows spilled to temporary files name their type ([`EnumType::by_serial`]).

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::RwLock;

/// Longest label PostgreSQL takes (NAMEDATALEN - 1 bytes).
pub const MAX_LABEL_BYTES: usize = 63;

/// One version of an enum type's definition.
#[derive(Debug)]
pub struct EnumType {
    /// The catalog's id of the type (in the id space of tables; its oid derives from it).
    pub id: u32,
    pub name: String,
    /// The labels in the order they were added: a value is an index here.
    labels: Vec<Box<str>>,
    /// Each label's sort position (PostgreSQL's `enumsortorder`): 1, 2, 3 ... as declared;
    /// a label added BEFORE or AFTER another takes the middle of its neighbours.
    sort: Vec<f64>,
    serial: u32,
}

/// Every definition made in this process, by serial number.
static DEFINED: RwLock<Vec<&'static EnumType>> = RwLock::new(Vec::new());

/// Why a definition cannot be made or changed (each PostgreSQL's message; SQLSTATE in
/// [`EnumError::sqlstate`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EnumError {
    #[error("invalid enum label \"{0}\"")]
    LabelTooLong(String),
    #[error("enum label \"{0}\" already exists")]
    Duplicate(String),
    #[error("\"{0}\" is not an existing enum label")]
    Missing(String),
}

impl EnumError {
    pub fn sqlstate(&self) -> &'static str {
        match self {
            EnumError::LabelTooLong(_) => "42602",
            EnumError::Duplicate(_) => "42710",
            EnumError::Missing(_) => "22023",
        }
    }

    /// PostgreSQL's DETAIL, where it gives one.
    pub fn detail(&self) -> Option<String> {
        match self {
            EnumError::LabelTooLong(_) => Some(format!("Labels must be {MAX_LABEL_BYTES} bytes or less.")),
            _ => None,
        }
    }
}

/// Where `ALTER TYPE ... ADD VALUE` puts a label.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Place<'a> {
    Last,
    Before(&'a str),
    After(&'a str),
}

impl EnumType {
    /// A new type of these labels, in this order.
    pub fn define(id: u32, name: &str, labels: &[String]) -> Result<EnumRef, EnumError> {
        let mut def = EnumType {
            id,
            name: name.to_string(),
            labels: Vec::with_capacity(labels.len()),
            sort: Vec::with_capacity(labels.len()),
            serial: 0,
        };
        for (i, l) in labels.iter().enumerate() {
            check_label(l)?;
            if def.index_of(l).is_some() {
                return Err(EnumError::Duplicate(l.clone()));
            }
            def.labels.push(l.as_str().into());
            def.sort.push((i + 1) as f64);
        }
        Ok(publish(def))
    }

    /// The labels in sort order.
    pub fn labels_sorted(&self) -> Vec<&str> {
        let mut order: Vec<usize> = (0..self.labels.len()).collect();
        order.sort_by(|&a, &b| self.sort[a].total_cmp(&self.sort[b]));
        order.into_iter().map(|i| &*self.labels[i]).collect()
    }

    /// Each label with its sort position, in the order they were added.
    pub fn labels(&self) -> impl Iterator<Item = (&str, f64)> {
        self.labels.iter().map(|l| &**l).zip(self.sort.iter().copied())
    }

    /// The index of `label` (labels are case-sensitive, as in PostgreSQL).
    pub fn index_of(&self, label: &str) -> Option<u32> {
        self.labels.iter().position(|l| &**l == label).map(|i| i as u32)
    }

    pub fn label(&self, index: u32) -> Option<&str> {
        self.labels.get(index as usize).map(|l| &**l)
    }

    /// The sort position of the label at `index` (past the labels: after all of them).
    pub fn sort_of(&self, index: u32) -> f64 {
        self.sort.get(index as usize).copied().unwrap_or(f64::INFINITY)
    }

    /// The definition whose serial number is `serial`, if this process made one.
    pub fn by_serial(serial: u32) -> Option<EnumRef> {
        let defined = DEFINED.read().unwrap_or_else(|e| e.into_inner());
        defined.get(serial as usize).copied().map(EnumRef)
    }

    pub fn serial(&self) -> u32 {
        self.serial
    }
}

impl EnumRef {
    /// The next version of the type with `label` added at `place` (`Duplicate` when the
    /// type has it: IF NOT EXISTS is the caller's to judge).
    pub fn add_label(self, label: &str, place: Place<'_>) -> Result<EnumRef, EnumError> {
        check_label(label)?;
        if self.index_of(label).is_some() {
            return Err(EnumError::Duplicate(label.to_string()));
        }
        let sorted: Vec<f64> = {
            let mut s = self.sort.clone();
            s.sort_by(f64::total_cmp);
            s
        };
        let neighbour = |l: &str| {
            self.index_of(l)
                .map(|i| self.sort_of(i))
                .ok_or_else(|| EnumError::Missing(l.to_string()))
        };
        let position = match place {
            Place::Last => sorted.last().map_or(1.0, |s| s.floor() + 1.0),
            Place::Before(l) => {
                let at = neighbour(l)?;
                let below = sorted.iter().rev().find(|&&s| s < at).copied().unwrap_or(at - 1.0);
                (below + at) / 2.0
            }
            Place::After(l) => {
                let at = neighbour(l)?;
                let above = sorted.iter().find(|&&s| s > at).copied().unwrap_or(at + 1.0);
                (at + above) / 2.0
            }
        };
        let mut def = self.copy();
        def.labels.push(label.into());
        def.sort.push(position);
        Ok(publish(def))
    }

    /// The next version of the type with label `from` named `to`.
    pub fn rename_label(self, from: &str, to: &str) -> Result<EnumRef, EnumError> {
        check_label(to)?;
        let i = self
            .index_of(from)
            .ok_or_else(|| EnumError::Missing(from.to_string()))?;
        if self.index_of(to).is_some() {
            return Err(EnumError::Duplicate(to.to_string()));
        }
        let mut def = self.copy();
        def.labels[i as usize] = to.into();
        Ok(publish(def))
    }

    /// The next version of the type, named `name`.
    pub fn renamed(self, name: &str) -> EnumRef {
        let mut def = self.copy();
        def.name = name.to_string();
        publish(def)
    }

    fn copy(self) -> EnumType {
        EnumType {
            id: self.id,
            name: self.name.clone(),
            labels: self.labels.clone(),
            sort: self.sort.clone(),
            serial: 0,
        }
    }

    /// The value of text `input`, if it is one of the type's labels.
    pub fn parse(self, input: &str) -> Option<EnumValue> {
        self.index_of(input).map(|index| EnumValue { ty: self, index })
    }
}

fn check_label(label: &str) -> Result<(), EnumError> {
    if label.is_empty() || label.len() > MAX_LABEL_BYTES {
        return Err(EnumError::LabelTooLong(label.to_string()));
    }
    Ok(())
}

fn publish(mut def: EnumType) -> EnumRef {
    let mut defined = DEFINED.write().unwrap_or_else(|e| e.into_inner());
    def.serial = defined.len() as u32;
    let leaked: &'static EnumType = Box::leak(Box::new(def));
    defined.push(leaked);
    EnumRef(leaked)
}

/// A version of an enum type: what [`crate::DataType::Enum`] holds. Two versions of one
/// type are the same type.
#[derive(Debug, Clone, Copy)]
pub struct EnumRef(&'static EnumType);

impl std::ops::Deref for EnumRef {
    type Target = EnumType;
    fn deref(&self) -> &EnumType {
        self.0
    }
}

impl PartialEq for EnumRef {
    fn eq(&self, other: &EnumRef) -> bool {
        self.0.id == other.0.id
    }
}
impl Eq for EnumRef {}

impl Hash for EnumRef {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.id.hash(state)
    }
}

/// A value of an enum type: the index of its label.
#[derive(Debug, Clone, Copy)]
pub struct EnumValue {
    pub ty: EnumRef,
    pub index: u32,
}

impl EnumValue {
    pub fn label(&self) -> &'static str {
        self.ty.0.label(self.index).unwrap_or("")
    }

    /// Its sort position among the type's labels.
    pub fn sort(&self) -> f64 {
        self.ty.sort_of(self.index)
    }

    /// Values of one type compare by sort position; of different types (which SQL never
    /// compares) by type.
    pub fn compare(&self, other: &EnumValue) -> Ordering {
        self.ty
            .id
            .cmp(&other.ty.id)
            .then_with(|| self.sort().total_cmp(&other.sort()))
    }
}

impl fmt::Display for EnumValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mood() -> EnumRef {
        EnumType::define(7, "mood", &["sad".into(), "ok".into(), "happy".into()]).unwrap()
    }

    #[test]
    fn added_labels_sort_between_their_neighbours_and_old_values_keep_their_place() {
        let v1 = mood();
        let sad = v1.parse("sad").unwrap();
        let v2 = v1.add_label("meh", Place::Before("ok")).unwrap();
        let v3 = v2.add_label("glad", Place::After("ok")).unwrap();
        let v4 = v3.add_label("ecstatic", Place::Last).unwrap();
        assert_eq!(v4.labels_sorted(), ["sad", "meh", "ok", "glad", "happy", "ecstatic"]);
        let meh = v4.parse("meh").unwrap();
        assert_eq!(sad.compare(&meh), Ordering::Less);
        assert_eq!(
            v4.parse("happy").unwrap().compare(&v1.parse("happy").unwrap()),
            Ordering::Equal
        );
        assert_eq!(v1, v4, "versions of one type are one type");
        assert_eq!(
            EnumType::by_serial(v4.serial()).map(|d| d.name.clone()).as_deref(),
            Some("mood")
        );
    }

    #[test]
    fn bad_labels_are_refused() {
        let v1 = mood();
        assert_eq!(
            v1.add_label("ok", Place::Last).unwrap_err(),
            EnumError::Duplicate("ok".into())
        );
        assert_eq!(
            v1.add_label("x", Place::Before("nope")).unwrap_err(),
            EnumError::Missing("nope".into())
        );
        assert!(matches!(
            EnumType::define(1, "t", &["a".repeat(64)]),
            Err(EnumError::LabelTooLong(_))
        ));
        assert!(v1.parse("Sad").is_none());
        assert_eq!(
            v1.rename_label("ok", "fine").unwrap().labels_sorted(),
            ["sad", "fine", "happy"]
        );
    }
}
