//! pgjdbc's `DatabaseMetaData` lookups (`getTables`, `getColumns`, `getPrimaryKeys`,
//! `getSchemas`) through a real client: the SQL texts are the ones pgjdbc 42.7.4 sends
//! (captured from its trace log), the answers are checked row by row, through the
//! extended protocol (typed, binary results) and the simple one (text).

mod common;

use common::{Server, server};

use tokio_postgres::{Client, NoTls, Row, SimpleQueryMessage};

/// getTables(null, null, "j_%", {"TABLE"})
const GET_TABLES: &str = concat!(
    r"SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, c.relname AS TABLE_NAME,  CASE ",
    r"n.nspname ~ '^pg_' OR n.nspname = 'information_schema'  WHEN true THEN CASE  WHEN ",
    r"n.nspname = 'pg_catalog' OR n.nspname = 'information_schema' THEN CASE c.relkind   WHEN ",
    r"'r' THEN 'SYSTEM TABLE'   WHEN 'v' THEN 'SYSTEM VIEW'   WHEN 'i' THEN 'SYSTEM INDEX'   ",
    r"ELSE NULL   END  WHEN n.nspname = 'pg_toast' THEN CASE c.relkind   WHEN 'r' THEN ",
    r"'SYSTEM TOAST TABLE'   WHEN 'i' THEN 'SYSTEM TOAST INDEX'   ELSE NULL   END  ELSE CASE ",
    r"c.relkind   WHEN 'r' THEN 'TEMPORARY TABLE'   WHEN 'p' THEN 'TEMPORARY TABLE'   WHEN ",
    r"'i' THEN 'TEMPORARY INDEX'   WHEN 'S' THEN 'TEMPORARY SEQUENCE'   WHEN 'v' THEN ",
    r"'TEMPORARY VIEW'   ELSE NULL   END  END  WHEN false THEN CASE c.relkind  WHEN 'r' THEN ",
    r"'TABLE'  WHEN 'p' THEN 'PARTITIONED TABLE'  WHEN 'i' THEN 'INDEX'  WHEN 'P' then ",
    r"'PARTITIONED INDEX'  WHEN 'S' THEN 'SEQUENCE'  WHEN 'v' THEN 'VIEW'  WHEN 'c' THEN ",
    r"'TYPE'  WHEN 'f' THEN 'FOREIGN TABLE'  WHEN 'm' THEN 'MATERIALIZED VIEW'  ELSE NULL  ",
    r"END  ELSE NULL  END  AS TABLE_TYPE, d.description AS REMARKS,  '' as TYPE_CAT, '' as ",
    r"TYPE_SCHEM, '' as TYPE_NAME, '' AS SELF_REFERENCING_COL_NAME, '' AS REF_GENERATION  ",
    r"FROM pg_catalog.pg_namespace n, pg_catalog.pg_class c  LEFT JOIN ",
    r"pg_catalog.pg_description d ON (c.oid = d.objoid AND d.objsubid = 0  and d.classoid = ",
    r"'pg_class'::regclass)  WHERE c.relnamespace = n.oid  AND c.relname LIKE 'j_%' AND ",
    r"(false  OR ( c.relkind = 'r' AND n.nspname !~ '^pg_' AND n.nspname <> ",
    r"'information_schema' ) )  ORDER BY TABLE_TYPE,TABLE_SCHEM,TABLE_NAME ",
);

/// getTables(null, "public", "j\\_%", {"TABLE", "VIEW"})
const GET_TABLES_ESCAPED: &str = concat!(
    r"SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, c.relname AS TABLE_NAME,  CASE ",
    r"n.nspname ~ '^pg_' OR n.nspname = 'information_schema'  WHEN true THEN CASE  WHEN ",
    r"n.nspname = 'pg_catalog' OR n.nspname = 'information_schema' THEN CASE c.relkind   WHEN ",
    r"'r' THEN 'SYSTEM TABLE'   WHEN 'v' THEN 'SYSTEM VIEW'   WHEN 'i' THEN 'SYSTEM INDEX'   ",
    r"ELSE NULL   END  WHEN n.nspname = 'pg_toast' THEN CASE c.relkind   WHEN 'r' THEN ",
    r"'SYSTEM TOAST TABLE'   WHEN 'i' THEN 'SYSTEM TOAST INDEX'   ELSE NULL   END  ELSE CASE ",
    r"c.relkind   WHEN 'r' THEN 'TEMPORARY TABLE'   WHEN 'p' THEN 'TEMPORARY TABLE'   WHEN ",
    r"'i' THEN 'TEMPORARY INDEX'   WHEN 'S' THEN 'TEMPORARY SEQUENCE'   WHEN 'v' THEN ",
    r"'TEMPORARY VIEW'   ELSE NULL   END  END  WHEN false THEN CASE c.relkind  WHEN 'r' THEN ",
    r"'TABLE'  WHEN 'p' THEN 'PARTITIONED TABLE'  WHEN 'i' THEN 'INDEX'  WHEN 'P' then ",
    r"'PARTITIONED INDEX'  WHEN 'S' THEN 'SEQUENCE'  WHEN 'v' THEN 'VIEW'  WHEN 'c' THEN ",
    r"'TYPE'  WHEN 'f' THEN 'FOREIGN TABLE'  WHEN 'm' THEN 'MATERIALIZED VIEW'  ELSE NULL  ",
    r"END  ELSE NULL  END  AS TABLE_TYPE, d.description AS REMARKS,  '' as TYPE_CAT, '' as ",
    r"TYPE_SCHEM, '' as TYPE_NAME, '' AS SELF_REFERENCING_COL_NAME, '' AS REF_GENERATION  ",
    r"FROM pg_catalog.pg_namespace n, pg_catalog.pg_class c  LEFT JOIN ",
    r"pg_catalog.pg_description d ON (c.oid = d.objoid AND d.objsubid = 0  and d.classoid = ",
    r"'pg_class'::regclass)  WHERE c.relnamespace = n.oid  AND n.nspname LIKE 'public' AND ",
    r"c.relname LIKE 'j\_%' AND (false  OR ( c.relkind = 'r' AND n.nspname !~ '^pg_' AND ",
    r"n.nspname <> 'information_schema' )  OR ( c.relkind = 'v' AND n.nspname <> 'pg_catalog' ",
    r"AND n.nspname <> 'information_schema' ) )  ORDER BY TABLE_TYPE,TABLE_SCHEM,TABLE_NAME ",
);

/// getTables(null, "pub%", "j%", {"INDEX"})
const GET_TABLES_INDEXES: &str = concat!(
    r"SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, c.relname AS TABLE_NAME,  CASE ",
    r"n.nspname ~ '^pg_' OR n.nspname = 'information_schema'  WHEN true THEN CASE  WHEN ",
    r"n.nspname = 'pg_catalog' OR n.nspname = 'information_schema' THEN CASE c.relkind   WHEN ",
    r"'r' THEN 'SYSTEM TABLE'   WHEN 'v' THEN 'SYSTEM VIEW'   WHEN 'i' THEN 'SYSTEM INDEX'   ",
    r"ELSE NULL   END  WHEN n.nspname = 'pg_toast' THEN CASE c.relkind   WHEN 'r' THEN ",
    r"'SYSTEM TOAST TABLE'   WHEN 'i' THEN 'SYSTEM TOAST INDEX'   ELSE NULL   END  ELSE CASE ",
    r"c.relkind   WHEN 'r' THEN 'TEMPORARY TABLE'   WHEN 'p' THEN 'TEMPORARY TABLE'   WHEN ",
    r"'i' THEN 'TEMPORARY INDEX'   WHEN 'S' THEN 'TEMPORARY SEQUENCE'   WHEN 'v' THEN ",
    r"'TEMPORARY VIEW'   ELSE NULL   END  END  WHEN false THEN CASE c.relkind  WHEN 'r' THEN ",
    r"'TABLE'  WHEN 'p' THEN 'PARTITIONED TABLE'  WHEN 'i' THEN 'INDEX'  WHEN 'P' then ",
    r"'PARTITIONED INDEX'  WHEN 'S' THEN 'SEQUENCE'  WHEN 'v' THEN 'VIEW'  WHEN 'c' THEN ",
    r"'TYPE'  WHEN 'f' THEN 'FOREIGN TABLE'  WHEN 'm' THEN 'MATERIALIZED VIEW'  ELSE NULL  ",
    r"END  ELSE NULL  END  AS TABLE_TYPE, d.description AS REMARKS,  '' as TYPE_CAT, '' as ",
    r"TYPE_SCHEM, '' as TYPE_NAME, '' AS SELF_REFERENCING_COL_NAME, '' AS REF_GENERATION  ",
    r"FROM pg_catalog.pg_namespace n, pg_catalog.pg_class c  LEFT JOIN ",
    r"pg_catalog.pg_description d ON (c.oid = d.objoid AND d.objsubid = 0  and d.classoid = ",
    r"'pg_class'::regclass)  WHERE c.relnamespace = n.oid  AND n.nspname LIKE 'pub%' AND ",
    r"c.relname LIKE 'j%' AND (false  OR ( c.relkind = 'i' AND n.nspname !~ '^pg_' AND ",
    r"n.nspname <> 'information_schema' ) )  ORDER BY TABLE_TYPE,TABLE_SCHEM,TABLE_NAME ",
);

/// getTables(null, "other", "%", null)
const GET_TABLES_OTHER_SCHEMA: &str = concat!(
    r"SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, c.relname AS TABLE_NAME,  CASE ",
    r"n.nspname ~ '^pg_' OR n.nspname = 'information_schema'  WHEN true THEN CASE  WHEN ",
    r"n.nspname = 'pg_catalog' OR n.nspname = 'information_schema' THEN CASE c.relkind   WHEN ",
    r"'r' THEN 'SYSTEM TABLE'   WHEN 'v' THEN 'SYSTEM VIEW'   WHEN 'i' THEN 'SYSTEM INDEX'   ",
    r"ELSE NULL   END  WHEN n.nspname = 'pg_toast' THEN CASE c.relkind   WHEN 'r' THEN ",
    r"'SYSTEM TOAST TABLE'   WHEN 'i' THEN 'SYSTEM TOAST INDEX'   ELSE NULL   END  ELSE CASE ",
    r"c.relkind   WHEN 'r' THEN 'TEMPORARY TABLE'   WHEN 'p' THEN 'TEMPORARY TABLE'   WHEN ",
    r"'i' THEN 'TEMPORARY INDEX'   WHEN 'S' THEN 'TEMPORARY SEQUENCE'   WHEN 'v' THEN ",
    r"'TEMPORARY VIEW'   ELSE NULL   END  END  WHEN false THEN CASE c.relkind  WHEN 'r' THEN ",
    r"'TABLE'  WHEN 'p' THEN 'PARTITIONED TABLE'  WHEN 'i' THEN 'INDEX'  WHEN 'P' then ",
    r"'PARTITIONED INDEX'  WHEN 'S' THEN 'SEQUENCE'  WHEN 'v' THEN 'VIEW'  WHEN 'c' THEN ",
    r"'TYPE'  WHEN 'f' THEN 'FOREIGN TABLE'  WHEN 'm' THEN 'MATERIALIZED VIEW'  ELSE NULL  ",
    r"END  ELSE NULL  END  AS TABLE_TYPE, d.description AS REMARKS,  '' as TYPE_CAT, '' as ",
    r"TYPE_SCHEM, '' as TYPE_NAME, '' AS SELF_REFERENCING_COL_NAME, '' AS REF_GENERATION  ",
    r"FROM pg_catalog.pg_namespace n, pg_catalog.pg_class c  LEFT JOIN ",
    r"pg_catalog.pg_description d ON (c.oid = d.objoid AND d.objsubid = 0  and d.classoid = ",
    r"'pg_class'::regclass)  WHERE c.relnamespace = n.oid  AND n.nspname LIKE 'other' AND ",
    r"c.relname LIKE '%' ORDER BY TABLE_TYPE,TABLE_SCHEM,TABLE_NAME ",
);

/// getTables(null, null, null, null)
const GET_TABLES_ALL: &str = concat!(
    r"SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, c.relname AS TABLE_NAME,  CASE ",
    r"n.nspname ~ '^pg_' OR n.nspname = 'information_schema'  WHEN true THEN CASE  WHEN ",
    r"n.nspname = 'pg_catalog' OR n.nspname = 'information_schema' THEN CASE c.relkind   WHEN ",
    r"'r' THEN 'SYSTEM TABLE'   WHEN 'v' THEN 'SYSTEM VIEW'   WHEN 'i' THEN 'SYSTEM INDEX'   ",
    r"ELSE NULL   END  WHEN n.nspname = 'pg_toast' THEN CASE c.relkind   WHEN 'r' THEN ",
    r"'SYSTEM TOAST TABLE'   WHEN 'i' THEN 'SYSTEM TOAST INDEX'   ELSE NULL   END  ELSE CASE ",
    r"c.relkind   WHEN 'r' THEN 'TEMPORARY TABLE'   WHEN 'p' THEN 'TEMPORARY TABLE'   WHEN ",
    r"'i' THEN 'TEMPORARY INDEX'   WHEN 'S' THEN 'TEMPORARY SEQUENCE'   WHEN 'v' THEN ",
    r"'TEMPORARY VIEW'   ELSE NULL   END  END  WHEN false THEN CASE c.relkind  WHEN 'r' THEN ",
    r"'TABLE'  WHEN 'p' THEN 'PARTITIONED TABLE'  WHEN 'i' THEN 'INDEX'  WHEN 'P' then ",
    r"'PARTITIONED INDEX'  WHEN 'S' THEN 'SEQUENCE'  WHEN 'v' THEN 'VIEW'  WHEN 'c' THEN ",
    r"'TYPE'  WHEN 'f' THEN 'FOREIGN TABLE'  WHEN 'm' THEN 'MATERIALIZED VIEW'  ELSE NULL  ",
    r"END  ELSE NULL  END  AS TABLE_TYPE, d.description AS REMARKS,  '' as TYPE_CAT, '' as ",
    r"TYPE_SCHEM, '' as TYPE_NAME, '' AS SELF_REFERENCING_COL_NAME, '' AS REF_GENERATION  ",
    r"FROM pg_catalog.pg_namespace n, pg_catalog.pg_class c  LEFT JOIN ",
    r"pg_catalog.pg_description d ON (c.oid = d.objoid AND d.objsubid = 0  and d.classoid = ",
    r"'pg_class'::regclass)  WHERE c.relnamespace = n.oid  ORDER BY ",
    r"TABLE_TYPE,TABLE_SCHEM,TABLE_NAME ",
);

/// getTables(null, null, "it's%", null)
const GET_TABLES_QUOTE: &str = concat!(
    r"SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, c.relname AS TABLE_NAME,  CASE ",
    r"n.nspname ~ '^pg_' OR n.nspname = 'information_schema'  WHEN true THEN CASE  WHEN ",
    r"n.nspname = 'pg_catalog' OR n.nspname = 'information_schema' THEN CASE c.relkind   WHEN ",
    r"'r' THEN 'SYSTEM TABLE'   WHEN 'v' THEN 'SYSTEM VIEW'   WHEN 'i' THEN 'SYSTEM INDEX'   ",
    r"ELSE NULL   END  WHEN n.nspname = 'pg_toast' THEN CASE c.relkind   WHEN 'r' THEN ",
    r"'SYSTEM TOAST TABLE'   WHEN 'i' THEN 'SYSTEM TOAST INDEX'   ELSE NULL   END  ELSE CASE ",
    r"c.relkind   WHEN 'r' THEN 'TEMPORARY TABLE'   WHEN 'p' THEN 'TEMPORARY TABLE'   WHEN ",
    r"'i' THEN 'TEMPORARY INDEX'   WHEN 'S' THEN 'TEMPORARY SEQUENCE'   WHEN 'v' THEN ",
    r"'TEMPORARY VIEW'   ELSE NULL   END  END  WHEN false THEN CASE c.relkind  WHEN 'r' THEN ",
    r"'TABLE'  WHEN 'p' THEN 'PARTITIONED TABLE'  WHEN 'i' THEN 'INDEX'  WHEN 'P' then ",
    r"'PARTITIONED INDEX'  WHEN 'S' THEN 'SEQUENCE'  WHEN 'v' THEN 'VIEW'  WHEN 'c' THEN ",
    r"'TYPE'  WHEN 'f' THEN 'FOREIGN TABLE'  WHEN 'm' THEN 'MATERIALIZED VIEW'  ELSE NULL  ",
    r"END  ELSE NULL  END  AS TABLE_TYPE, d.description AS REMARKS,  '' as TYPE_CAT, '' as ",
    r"TYPE_SCHEM, '' as TYPE_NAME, '' AS SELF_REFERENCING_COL_NAME, '' AS REF_GENERATION  ",
    r"FROM pg_catalog.pg_namespace n, pg_catalog.pg_class c  LEFT JOIN ",
    r"pg_catalog.pg_description d ON (c.oid = d.objoid AND d.objsubid = 0  and d.classoid = ",
    r"'pg_class'::regclass)  WHERE c.relnamespace = n.oid  AND c.relname LIKE 'it''s%' ORDER ",
    r"BY TABLE_TYPE,TABLE_SCHEM,TABLE_NAME ",
);

/// getColumns(null, null, "j_items", null)
const GET_COLUMNS: &str = concat!(
    r"SELECT * FROM (SELECT n.nspname,c.relname,a.attname,a.atttypid,a.attnotnull OR ",
    r"(t.typtype = 'd' AND t.typnotnull) AS ",
    r"attnotnull,a.atttypmod,a.attlen,t.typtypmod,row_number() OVER (PARTITION BY a.attrelid ",
    r"ORDER BY a.attnum) AS attnum, nullif(a.attidentity, '') as ",
    r"attidentity,nullif(a.attgenerated, '') as ",
    r"attgenerated,pg_catalog.pg_get_expr(def.adbin, def.adrelid) AS ",
    r"adsrc,dsc.description,t.typbasetype,t.typtype  FROM pg_catalog.pg_namespace n  JOIN ",
    r"pg_catalog.pg_class c ON (c.relnamespace = n.oid)  JOIN pg_catalog.pg_attribute a ON ",
    r"(a.attrelid=c.oid)  JOIN pg_catalog.pg_type t ON (a.atttypid = t.oid)  LEFT JOIN ",
    r"pg_catalog.pg_attrdef def ON (a.attrelid=def.adrelid AND a.attnum = def.adnum)  LEFT ",
    r"JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid)  ",
    r"LEFT JOIN pg_catalog.pg_class dc ON (dc.oid=dsc.classoid AND dc.relname='pg_class')  ",
    r"LEFT JOIN pg_catalog.pg_namespace dn ON (dc.relnamespace=dn.oid AND ",
    r"dn.nspname='pg_catalog')  WHERE c.relkind in ('r','p','v','f','m') and a.attnum > 0 AND ",
    r"NOT a.attisdropped  AND c.relname LIKE 'j_items') c WHERE true  ORDER BY ",
    r"nspname,c.relname,attnum ",
);

/// getColumns(null, null, "j%", null)
const GET_COLUMNS_J: &str = concat!(
    r"SELECT * FROM (SELECT n.nspname,c.relname,a.attname,a.atttypid,a.attnotnull OR ",
    r"(t.typtype = 'd' AND t.typnotnull) AS ",
    r"attnotnull,a.atttypmod,a.attlen,t.typtypmod,row_number() OVER (PARTITION BY a.attrelid ",
    r"ORDER BY a.attnum) AS attnum, nullif(a.attidentity, '') as ",
    r"attidentity,nullif(a.attgenerated, '') as ",
    r"attgenerated,pg_catalog.pg_get_expr(def.adbin, def.adrelid) AS ",
    r"adsrc,dsc.description,t.typbasetype,t.typtype  FROM pg_catalog.pg_namespace n  JOIN ",
    r"pg_catalog.pg_class c ON (c.relnamespace = n.oid)  JOIN pg_catalog.pg_attribute a ON ",
    r"(a.attrelid=c.oid)  JOIN pg_catalog.pg_type t ON (a.atttypid = t.oid)  LEFT JOIN ",
    r"pg_catalog.pg_attrdef def ON (a.attrelid=def.adrelid AND a.attnum = def.adnum)  LEFT ",
    r"JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid)  ",
    r"LEFT JOIN pg_catalog.pg_class dc ON (dc.oid=dsc.classoid AND dc.relname='pg_class')  ",
    r"LEFT JOIN pg_catalog.pg_namespace dn ON (dc.relnamespace=dn.oid AND ",
    r"dn.nspname='pg_catalog')  WHERE c.relkind in ('r','p','v','f','m') and a.attnum > 0 AND ",
    r"NOT a.attisdropped  AND c.relname LIKE 'j%') c WHERE true  ORDER BY ",
    r"nspname,c.relname,attnum ",
);

/// getColumns(null, "public", "j\\_%", "%a%")
const GET_COLUMNS_PATTERNS: &str = concat!(
    r"SELECT * FROM (SELECT n.nspname,c.relname,a.attname,a.atttypid,a.attnotnull OR ",
    r"(t.typtype = 'd' AND t.typnotnull) AS ",
    r"attnotnull,a.atttypmod,a.attlen,t.typtypmod,row_number() OVER (PARTITION BY a.attrelid ",
    r"ORDER BY a.attnum) AS attnum, nullif(a.attidentity, '') as ",
    r"attidentity,nullif(a.attgenerated, '') as ",
    r"attgenerated,pg_catalog.pg_get_expr(def.adbin, def.adrelid) AS ",
    r"adsrc,dsc.description,t.typbasetype,t.typtype  FROM pg_catalog.pg_namespace n  JOIN ",
    r"pg_catalog.pg_class c ON (c.relnamespace = n.oid)  JOIN pg_catalog.pg_attribute a ON ",
    r"(a.attrelid=c.oid)  JOIN pg_catalog.pg_type t ON (a.atttypid = t.oid)  LEFT JOIN ",
    r"pg_catalog.pg_attrdef def ON (a.attrelid=def.adrelid AND a.attnum = def.adnum)  LEFT ",
    r"JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid)  ",
    r"LEFT JOIN pg_catalog.pg_class dc ON (dc.oid=dsc.classoid AND dc.relname='pg_class')  ",
    r"LEFT JOIN pg_catalog.pg_namespace dn ON (dc.relnamespace=dn.oid AND ",
    r"dn.nspname='pg_catalog')  WHERE c.relkind in ('r','p','v','f','m') and a.attnum > 0 AND ",
    r"NOT a.attisdropped  AND n.nspname LIKE 'public' AND c.relname LIKE 'j\_%') c WHERE true ",
    r" AND attname LIKE '%a%' ORDER BY nspname,c.relname,attnum ",
);

/// getColumns(null, "public", "j\\_p_ir", "_")
const GET_COLUMNS_PAIR: &str = concat!(
    r"SELECT * FROM (SELECT n.nspname,c.relname,a.attname,a.atttypid,a.attnotnull OR ",
    r"(t.typtype = 'd' AND t.typnotnull) AS ",
    r"attnotnull,a.atttypmod,a.attlen,t.typtypmod,row_number() OVER (PARTITION BY a.attrelid ",
    r"ORDER BY a.attnum) AS attnum, nullif(a.attidentity, '') as ",
    r"attidentity,nullif(a.attgenerated, '') as ",
    r"attgenerated,pg_catalog.pg_get_expr(def.adbin, def.adrelid) AS ",
    r"adsrc,dsc.description,t.typbasetype,t.typtype  FROM pg_catalog.pg_namespace n  JOIN ",
    r"pg_catalog.pg_class c ON (c.relnamespace = n.oid)  JOIN pg_catalog.pg_attribute a ON ",
    r"(a.attrelid=c.oid)  JOIN pg_catalog.pg_type t ON (a.atttypid = t.oid)  LEFT JOIN ",
    r"pg_catalog.pg_attrdef def ON (a.attrelid=def.adrelid AND a.attnum = def.adnum)  LEFT ",
    r"JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid)  ",
    r"LEFT JOIN pg_catalog.pg_class dc ON (dc.oid=dsc.classoid AND dc.relname='pg_class')  ",
    r"LEFT JOIN pg_catalog.pg_namespace dn ON (dc.relnamespace=dn.oid AND ",
    r"dn.nspname='pg_catalog')  WHERE c.relkind in ('r','p','v','f','m') and a.attnum > 0 AND ",
    r"NOT a.attisdropped  AND n.nspname LIKE 'public' AND c.relname LIKE 'j\_p_ir') c WHERE ",
    r"true  AND attname LIKE '_' ORDER BY nspname,c.relname,attnum ",
);

/// getPrimaryKeys(null, null, "j_items")
const GET_PRIMARY_KEYS: &str = concat!(
    r"SELECT        result.TABLE_CAT,        result.TABLE_SCHEM,        result.TABLE_NAME,    ",
    r"    result.COLUMN_NAME,        result.KEY_SEQ,        result.PK_NAME FROM      (SELECT ",
    r"NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM,   ct.relname AS TABLE_NAME, a.attname AS ",
    r"COLUMN_NAME,   (information_schema._pg_expandarray(i.indkey)).n AS KEY_SEQ, ci.relname ",
    r"AS PK_NAME,   information_schema._pg_expandarray(i.indkey) AS KEYS, a.attnum AS ",
    r"A_ATTNUM FROM pg_catalog.pg_class ct   JOIN pg_catalog.pg_attribute a ON (ct.oid = ",
    r"a.attrelid)   JOIN pg_catalog.pg_namespace n ON (ct.relnamespace = n.oid)   JOIN ",
    r"pg_catalog.pg_index i ON ( a.attrelid = i.indrelid)   JOIN pg_catalog.pg_class ci ON ",
    r"(ci.oid = i.indexrelid) WHERE true  AND ct.relname = 'j_items' AND i.indisprimary  ) ",
    r"result where  result.A_ATTNUM = (result.KEYS).x  ORDER BY result.table_name, ",
    r"result.pk_name, result.key_seq",
);

/// getPrimaryKeys(null, null, "j_pair")
const GET_PRIMARY_KEYS_PAIR: &str = concat!(
    r"SELECT        result.TABLE_CAT,        result.TABLE_SCHEM,        result.TABLE_NAME,    ",
    r"    result.COLUMN_NAME,        result.KEY_SEQ,        result.PK_NAME FROM      (SELECT ",
    r"NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM,   ct.relname AS TABLE_NAME, a.attname AS ",
    r"COLUMN_NAME,   (information_schema._pg_expandarray(i.indkey)).n AS KEY_SEQ, ci.relname ",
    r"AS PK_NAME,   information_schema._pg_expandarray(i.indkey) AS KEYS, a.attnum AS ",
    r"A_ATTNUM FROM pg_catalog.pg_class ct   JOIN pg_catalog.pg_attribute a ON (ct.oid = ",
    r"a.attrelid)   JOIN pg_catalog.pg_namespace n ON (ct.relnamespace = n.oid)   JOIN ",
    r"pg_catalog.pg_index i ON ( a.attrelid = i.indrelid)   JOIN pg_catalog.pg_class ci ON ",
    r"(ci.oid = i.indexrelid) WHERE true  AND ct.relname = 'j_pair' AND i.indisprimary  ) ",
    r"result where  result.A_ATTNUM = (result.KEYS).x  ORDER BY result.table_name, ",
    r"result.pk_name, result.key_seq",
);

/// getPrimaryKeys(null, "public", "j_items")
const GET_PRIMARY_KEYS_PUBLIC: &str = concat!(
    r"SELECT        result.TABLE_CAT,        result.TABLE_SCHEM,        result.TABLE_NAME,    ",
    r"    result.COLUMN_NAME,        result.KEY_SEQ,        result.PK_NAME FROM      (SELECT ",
    r"NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM,   ct.relname AS TABLE_NAME, a.attname AS ",
    r"COLUMN_NAME,   (information_schema._pg_expandarray(i.indkey)).n AS KEY_SEQ, ci.relname ",
    r"AS PK_NAME,   information_schema._pg_expandarray(i.indkey) AS KEYS, a.attnum AS ",
    r"A_ATTNUM FROM pg_catalog.pg_class ct   JOIN pg_catalog.pg_attribute a ON (ct.oid = ",
    r"a.attrelid)   JOIN pg_catalog.pg_namespace n ON (ct.relnamespace = n.oid)   JOIN ",
    r"pg_catalog.pg_index i ON ( a.attrelid = i.indrelid)   JOIN pg_catalog.pg_class ci ON ",
    r"(ci.oid = i.indexrelid) WHERE true  AND n.nspname = 'public' AND ct.relname = 'j_items' ",
    r"AND i.indisprimary  ) result where  result.A_ATTNUM = (result.KEYS).x  ORDER BY ",
    r"result.table_name, result.pk_name, result.key_seq",
);

/// getPrimaryKeys(null, "public", "jxitems")
const GET_PRIMARY_KEYS_NO_KEY: &str = concat!(
    r"SELECT        result.TABLE_CAT,        result.TABLE_SCHEM,        result.TABLE_NAME,    ",
    r"    result.COLUMN_NAME,        result.KEY_SEQ,        result.PK_NAME FROM      (SELECT ",
    r"NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM,   ct.relname AS TABLE_NAME, a.attname AS ",
    r"COLUMN_NAME,   (information_schema._pg_expandarray(i.indkey)).n AS KEY_SEQ, ci.relname ",
    r"AS PK_NAME,   information_schema._pg_expandarray(i.indkey) AS KEYS, a.attnum AS ",
    r"A_ATTNUM FROM pg_catalog.pg_class ct   JOIN pg_catalog.pg_attribute a ON (ct.oid = ",
    r"a.attrelid)   JOIN pg_catalog.pg_namespace n ON (ct.relnamespace = n.oid)   JOIN ",
    r"pg_catalog.pg_index i ON ( a.attrelid = i.indrelid)   JOIN pg_catalog.pg_class ci ON ",
    r"(ci.oid = i.indexrelid) WHERE true  AND n.nspname = 'public' AND ct.relname = 'jxitems' ",
    r"AND i.indisprimary  ) result where  result.A_ATTNUM = (result.KEYS).x  ORDER BY ",
    r"result.table_name, result.pk_name, result.key_seq",
);

/// getSchemas()
const GET_SCHEMAS: &str = concat!(
    r"SELECT nspname AS TABLE_SCHEM, NULL AS TABLE_CATALOG FROM pg_catalog.pg_namespace  ",
    r"WHERE nspname <> 'pg_toast' AND (nspname !~ '^pg_temp_'  OR nspname = ",
    r"(pg_catalog.current_schemas(true))[1]) AND (nspname !~ '^pg_toast_temp_'  OR nspname = ",
    r"replace((pg_catalog.current_schemas(true))[1], 'pg_temp_', 'pg_toast_temp_'))  ORDER BY ",
    r"TABLE_SCHEM",
);

/// getSchemas(null, "pub%")
const GET_SCHEMAS_PATTERN: &str = concat!(
    r"SELECT nspname AS TABLE_SCHEM, NULL AS TABLE_CATALOG FROM pg_catalog.pg_namespace  ",
    r"WHERE nspname <> 'pg_toast' AND (nspname !~ '^pg_temp_'  OR nspname = ",
    r"(pg_catalog.current_schemas(true))[1]) AND (nspname !~ '^pg_toast_temp_'  OR nspname = ",
    r"replace((pg_catalog.current_schemas(true))[1], 'pg_temp_', 'pg_toast_temp_'))  AND ",
    r"nspname LIKE 'pub%' ORDER BY TABLE_SCHEM",
);

/// getSchemas(null, "x%")
const GET_SCHEMAS_NO_MATCH: &str = concat!(
    r"SELECT nspname AS TABLE_SCHEM, NULL AS TABLE_CATALOG FROM pg_catalog.pg_namespace  ",
    r"WHERE nspname <> 'pg_toast' AND (nspname !~ '^pg_temp_'  OR nspname = ",
    r"(pg_catalog.current_schemas(true))[1]) AND (nspname !~ '^pg_toast_temp_'  OR nspname = ",
    r"replace((pg_catalog.current_schemas(true))[1], 'pg_temp_', 'pg_toast_temp_'))  AND ",
    r"nspname LIKE 'x%' ORDER BY TABLE_SCHEM",
);

/// A server with the tables the lookups are checked against.
async fn setup() -> (Server, Client) {
    let s = server().await;
    let (client, conn) = tokio_postgres::connect(&format!("host=127.0.0.1 port={} user=test", s.port), NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    // One statement per query: the server splits a multi-statement query string by
    // re-printing its tokens, which loses the doubling of a quote in 'x''y'.
    for sql in [
        "CREATE TABLE j_items (id BIGINT PRIMARY KEY, name TEXT NOT NULL, price NUMERIC(10,2), \
         qty INTEGER, seen TIMESTAMP, ok BOOLEAN, data BYTEA)",
        "CREATE INDEX j_items_name ON j_items (name)",
        "CREATE TABLE j_pair (a INTEGER, b VARCHAR(20) DEFAULT 'x''y', c SMALLINT DEFAULT 5, \
         d DOUBLE PRECISION DEFAULT -1.5, e NUMERIC, f TIMESTAMP DEFAULT CURRENT_TIMESTAMP, \
         g BOOLEAN DEFAULT true, h INTEGER DEFAULT -3, PRIMARY KEY (b, a))",
        "CREATE TABLE jxitems (x INTEGER)",
    ] {
        client.batch_execute(sql).await.unwrap();
    }
    (s, client)
}

/// The rows of a query through the simple protocol (every value as text).
async fn text_rows(c: &Client, sql: &str) -> Vec<Vec<Option<String>>> {
    c.simple_query(sql)
        .await
        .unwrap()
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect()),
            _ => None,
        })
        .collect()
}

/// The rows of a query through the extended protocol (binary results).
async fn rows(c: &Client, sql: &str) -> Vec<Row> {
    c.query(sql, &[]).await.unwrap()
}

fn names(rows: &[Row]) -> Vec<String> {
    rows[0].columns().iter().map(|c| c.name().to_string()).collect()
}

fn col<'a>(rows: &'a [Row], name: &str) -> Vec<Option<&'a str>> {
    rows.iter().map(|r| r.get::<_, Option<&str>>(name)).collect()
}

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

/// One getTables row, as text: TABLE_CAT .. REF_GENERATION.
fn table_row(name: &str, kind: &str) -> Vec<Option<String>> {
    vec![
        None,
        s("public"),
        s(name),
        s(kind),
        None,
        s(""),
        s(""),
        s(""),
        s(""),
        s(""),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_tables_lists_tables_and_indexes_by_pattern_and_type() {
    let (_s, c) = setup().await;
    // `_` in `j_%` matches any character: jxitems too.
    let r = rows(&c, GET_TABLES).await;
    assert_eq!(
        names(&r),
        [
            "table_cat",
            "table_schem",
            "table_name",
            "table_type",
            "remarks",
            "type_cat",
            "type_schem",
            "type_name",
            "self_referencing_col_name",
            "ref_generation"
        ]
    );
    assert_eq!(
        col(&r, "table_name"),
        [Some("j_items"), Some("j_pair"), Some("jxitems")]
    );
    assert_eq!(
        text_rows(&c, GET_TABLES).await,
        [
            table_row("j_items", "TABLE"),
            table_row("j_pair", "TABLE"),
            table_row("jxitems", "TABLE")
        ]
    );
    // `\_` is a literal underscore; VIEW adds nothing.
    assert_eq!(
        text_rows(&c, GET_TABLES_ESCAPED).await,
        [table_row("j_items", "TABLE"), table_row("j_pair", "TABLE")]
    );
    assert_eq!(
        text_rows(&c, GET_TABLES_INDEXES).await,
        [
            table_row("j_items_name", "INDEX"),
            table_row("j_items_pkey", "INDEX"),
            table_row("j_pair_pkey", "INDEX")
        ]
    );
    // No types: everything, ordered by TABLE_TYPE, TABLE_SCHEM, TABLE_NAME.
    assert_eq!(
        text_rows(&c, GET_TABLES_ALL).await,
        [
            table_row("j_items_name", "INDEX"),
            table_row("j_items_pkey", "INDEX"),
            table_row("j_pair_pkey", "INDEX"),
            table_row("j_items", "TABLE"),
            table_row("j_pair", "TABLE"),
            table_row("jxitems", "TABLE")
        ]
    );
    assert!(text_rows(&c, GET_TABLES_OTHER_SCHEMA).await.is_empty());
    assert!(text_rows(&c, GET_TABLES_QUOTE).await.is_empty());
    // A table created later is listed.
    c.batch_execute("CREATE TABLE j_late (k INTEGER)").await.unwrap();
    assert_eq!(
        col(&rows(&c, GET_TABLES).await, "table_name"),
        [Some("j_items"), Some("j_late"), Some("j_pair"), Some("jxitems")]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_columns_answers_pgjdbcs_inner_query() {
    let (_s, c) = setup().await;
    let r = rows(&c, GET_COLUMNS).await;
    assert_eq!(
        names(&r),
        [
            "nspname",
            "relname",
            "attname",
            "atttypid",
            "attnotnull",
            "atttypmod",
            "attlen",
            "typtypmod",
            "attnum",
            "attidentity",
            "attgenerated",
            "adsrc",
            "description",
            "typbasetype",
            "typtype"
        ]
    );
    // getColumns takes a pattern: the `_` of j_items matches jxitems too (as in PostgreSQL).
    let got: Vec<(&str, &str)> = r.iter().map(|r| (r.get("relname"), r.get("attname"))).collect();
    assert_eq!(got.last(), Some(&("jxitems", "x")));
    let r = &r[..r.len() - 1];
    assert_eq!(
        col(r, "attname"),
        ["id", "name", "price", "qty", "seen", "ok", "data"].map(Some)
    );
    assert!(col(r, "nspname").iter().all(|n| *n == Some("public")));
    assert!(col(r, "relname").iter().all(|n| *n == Some("j_items")));
    // int8, text, numeric, int4, timestamp, bool, bytea
    let oids: Vec<u32> = r.iter().map(|r| r.get("atttypid")).collect();
    assert_eq!(oids, [20, 25, 1700, 23, 1114, 16, 17]);
    // numeric(10,2): (10 << 16 | 2) + 4
    let typmods: Vec<i32> = r.iter().map(|r| r.get("atttypmod")).collect();
    assert_eq!(typmods, [-1, -1, (10 << 16 | 2) + 4, -1, -1, -1, -1]);
    let lens: Vec<i16> = r.iter().map(|r| r.get("attlen")).collect();
    assert_eq!(lens, [8, -1, -1, 4, 8, 1, -1]);
    let notnull: Vec<bool> = r.iter().map(|r| r.get("attnotnull")).collect();
    assert_eq!(notnull, [true, true, false, false, false, false, false]);
    let attnum: Vec<i64> = r.iter().map(|r| r.get("attnum")).collect();
    assert_eq!(attnum, [1, 2, 3, 4, 5, 6, 7]);
    assert!(
        r.iter()
            .all(|r| r.get::<_, i32>("typtypmod") == -1 && r.get::<_, u32>("typbasetype") == 0)
    );
    // typtype is a "char" (one byte).
    assert!(r.iter().all(|r| r.get::<_, i8>("typtype") == b'b' as i8));
    assert!(col(r, "adsrc").iter().all(Option::is_none));
    assert!(r.iter().all(|r| r.get::<_, Option<i8>>("attidentity").is_none()));
    // The same as text, as pgjdbc reads it.
    assert_eq!(
        text_rows(&c, GET_COLUMNS).await[2],
        [
            s("public"),
            s("j_items"),
            s("price"),
            s("1700"),
            s("f"),
            s("655366"),
            s("-1"),
            s("-1"),
            s("3"),
            None,
            None,
            None,
            None,
            s("0"),
            s("b")
        ]
    );

    // Tables by name, columns in their order.
    let r = rows(&c, GET_COLUMNS_J).await;
    let got: Vec<(&str, &str)> = r.iter().map(|r| (r.get("relname"), r.get("attname"))).collect();
    assert_eq!(got.len(), 7 + 8 + 1);
    assert_eq!(got[6], ("j_items", "data"));
    assert_eq!(got[7], ("j_pair", "a"));
    assert_eq!(got[15], ("jxitems", "x"));

    // A column pattern keeps the positions among all the table's columns.
    let r = rows(&c, GET_COLUMNS_PATTERNS).await;
    let got: Vec<(&str, &str, i64)> = r
        .iter()
        .map(|r| (r.get("relname"), r.get("attname"), r.get("attnum")))
        .collect();
    assert_eq!(
        got,
        [("j_items", "name", 2), ("j_items", "data", 7), ("j_pair", "a", 1)]
    );

    // Defaults as pg_get_expr shows them; VARCHAR(20): typmod 24; the key columns NOT NULL.
    let r = rows(&c, GET_COLUMNS_PAIR).await;
    assert_eq!(col(&r, "attname"), ["a", "b", "c", "d", "e", "f", "g", "h"].map(Some));
    assert_eq!(
        col(&r, "adsrc"),
        [
            None,
            Some("'x''y'::character varying"),
            Some("5"),
            Some("'-1.5'::double precision"),
            None,
            Some("CURRENT_TIMESTAMP"),
            Some("true"),
            Some("'-3'::integer")
        ]
    );
    let oids: Vec<u32> = r.iter().map(|r| r.get("atttypid")).collect();
    assert_eq!(oids, [23, 1043, 21, 701, 1700, 1114, 16, 23]);
    let typmods: Vec<i32> = r.iter().map(|r| r.get("atttypmod")).collect();
    assert_eq!(typmods, [-1, 24, -1, -1, -1, -1, -1, -1]);
    let notnull: Vec<bool> = r.iter().map(|r| r.get("attnotnull")).collect();
    assert_eq!(notnull, [true, true, false, false, false, false, false, false]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_primary_keys_lists_key_columns_in_key_order() {
    let (_s, c) = setup().await;
    let r = rows(&c, GET_PRIMARY_KEYS).await;
    assert_eq!(
        names(&r),
        [
            "table_cat",
            "table_schem",
            "table_name",
            "column_name",
            "key_seq",
            "pk_name"
        ]
    );
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].get::<_, Option<&str>>("table_cat"), None);
    assert_eq!(r[0].get::<_, &str>("table_schem"), "public");
    assert_eq!(r[0].get::<_, &str>("table_name"), "j_items");
    assert_eq!(r[0].get::<_, &str>("column_name"), "id");
    assert_eq!(r[0].get::<_, i32>("key_seq"), 1);
    assert_eq!(r[0].get::<_, &str>("pk_name"), "j_items_pkey");
    assert_eq!(
        text_rows(&c, GET_PRIMARY_KEYS_PUBLIC).await,
        [[None, s("public"), s("j_items"), s("id"), s("1"), s("j_items_pkey")]]
    );
    // PRIMARY KEY (b, a): b first.
    assert_eq!(
        text_rows(&c, GET_PRIMARY_KEYS_PAIR).await,
        [
            [None, s("public"), s("j_pair"), s("b"), s("1"), s("j_pair_pkey")],
            [None, s("public"), s("j_pair"), s("a"), s("2"), s("j_pair_pkey")]
        ]
    );
    assert!(text_rows(&c, GET_PRIMARY_KEYS_NO_KEY).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_schemas_lists_the_schemas() {
    let (_s, c) = setup().await;
    let r = rows(&c, GET_SCHEMAS).await;
    assert_eq!(names(&r), ["table_schem", "table_catalog"]);
    assert_eq!(
        text_rows(&c, GET_SCHEMAS).await,
        [
            [s("information_schema"), None],
            [s("pg_catalog"), None],
            [s("public"), None]
        ]
    );
    assert_eq!(text_rows(&c, GET_SCHEMAS_PATTERN).await, [[s("public"), None]]);
    assert!(text_rows(&c, GET_SCHEMAS_NO_MATCH).await.is_empty());
}
