//! Array literals where the SQL layer reads them (`x = ANY(array)`, `unnest`): an array
//! value is the text of its literal (`permafrost_types::array`, which reads and writes
//! them); nested arrays (`{{1,2},{3,4}}`) are read flat, as `ANY` reads them. Bad text is
//! an error (22P02), never a panic.

use crate::error::{Result, SqlError};

/// The elements of array literal `text`, in order: `None` for NULL, else the element's
/// text (unquoted and unescaped); nested arrays flat (`permafrost_types::array::read`).
pub fn elements(text: &str) -> Result<Vec<Option<String>>> {
    permafrost_types::array::elements(text).map_err(|e| permafrost_types::ValueError::from(e).into())
}

/// The elements of an array value (`None` for a NULL array): the engine carries an array
/// as its literal's text, so anything else is not an array (22P02).
pub fn elements_of(v: permafrost_types::ValueRef<'_>) -> Result<Option<Vec<Option<String>>>> {
    match v {
        permafrost_types::ValueRef::Null => Ok(None),
        permafrost_types::ValueRef::Text(t) => elements(t).map(Some),
        other => Err(not_an_array(other)),
    }
}

/// The error for a value that is not an array where one is compared (22P02).
pub fn not_an_array(v: permafrost_types::ValueRef<'_>) -> SqlError {
    SqlError::InvalidText(format!("malformed array literal: \"{v}\" (ANY and ALL take an array)"))
}
