// pgjdbc against a running permafrost serve: java -cp postgresql.jar:. Main PORT
// Each check runs on its own; prints `jdbc: N passed, M failed`, exits non-zero on failure.

import java.math.BigDecimal;
import java.sql.*;
import java.time.LocalDateTime;
import java.util.*;

public class Main {
    interface Check { void run(Connection c) throws Exception; }

    static String url;
    static final Map<String, Check> CHECKS = new LinkedHashMap<>();
    // Known gaps of the server: run only with -Dgaps=true (not counted), see README.md
    // (none at present).
    static final Map<String, Check> GAPS = new LinkedHashMap<>();

    static Connection connect() throws SQLException {
        return DriverManager.getConnection(url);
    }

    static void expect(boolean ok, Object what) {
        if (!ok) throw new AssertionError(String.valueOf(what));
    }

    static void expectEq(Object want, Object got) {
        expect(Objects.equals(want, got), "want " + want + ", got " + got);
    }

    /** Runs sql, which must fail with SQLSTATE code. */
    static void expectState(Connection c, String code, String sql) throws SQLException {
        try (Statement st = c.createStatement()) {
            st.execute(sql);
        } catch (SQLException e) {
            expectEq(code, e.getSQLState());
            return;
        }
        throw new AssertionError(sql + " did not fail");
    }

    static long count(Connection c, String where) throws SQLException {
        try (Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT count(*) FROM j_items WHERE " + where)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    static {
        CHECKS.put("metadata", c -> {
            DatabaseMetaData md = c.getMetaData();
            expectEq("PostgreSQL", md.getDatabaseProductName());
            expect(md.getDatabaseMajorVersion() >= 10, md.getDatabaseProductVersion());
            expect(c.getAutoCommit(), "autocommit is the default");
        });
        CHECKS.put("prepared insert, all types", c -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "INSERT INTO j_items (id, name, price, qty, seen, ok, data) VALUES (?, ?, ?, ?, ?, ?, ?)")) {
                // More executions than prepareThreshold (5): pgjdbc moves to a named
                // server-side statement and binary results on the way.
                for (int i = 1; i <= 10; i++) {
                    ps.setLong(1, i);
                    ps.setString(2, "item" + i);
                    ps.setBigDecimal(3, new BigDecimal(i).movePointLeft(1));
                    if (i % 3 == 0) ps.setNull(4, Types.INTEGER); else ps.setInt(4, i * 10);
                    // setObject(LocalDateTime) sends the type timestamp; setTimestamp would
                    // send an unspecified type (see the gap "setTimestamp" below).
                    ps.setObject(5, LocalDateTime.of(2024, 2, 29, 13, 45, i % 10));
                    ps.setBoolean(6, i % 2 == 0);
                    ps.setBytes(7, new byte[] {0, (byte) i, (byte) 0xff});
                    expectEq(1, ps.executeUpdate());
                }
            }
            expectEq(10L, count(c, "id <= 10"));
        });
        CHECKS.put("prepared select", c -> {
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT name, price, qty, seen, ok, data FROM j_items WHERE id = ?")) {
                for (int i = 1; i <= 10; i++) {
                    ps.setLong(1, i);
                    try (ResultSet rs = ps.executeQuery()) {
                        expect(rs.next(), "row " + i);
                        expectEq("item" + i, rs.getString("name"));
                        expectEq(0, new BigDecimal(i).movePointLeft(1).compareTo(rs.getBigDecimal("price")));
                        int qty = rs.getInt("qty");
                        expectEq(i % 3 == 0, rs.wasNull());
                        if (i % 3 != 0) expectEq(i * 10, qty);
                        expectEq(LocalDateTime.of(2024, 2, 29, 13, 45, i % 10),
                                rs.getObject("seen", LocalDateTime.class));
                        expectEq(Timestamp.valueOf("2024-02-29 13:45:0" + (i % 10)), rs.getTimestamp("seen"));
                        expectEq(i % 2 == 0, rs.getBoolean("ok"));
                        expectEq(Arrays.toString(new byte[] {0, (byte) i, (byte) 0xff}),
                                Arrays.toString(rs.getBytes("data")));
                        expect(!rs.next(), "one row");
                    }
                }
            }
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT id FROM j_items WHERE name LIKE ? AND id BETWEEN ? AND ? ORDER BY id DESC")) {
                ps.setString(1, "item%");
                ps.setLong(2, 3);
                ps.setLong(3, 5);
                List<Long> ids = new ArrayList<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) ids.add(rs.getLong(1));
                }
                expectEq(List.of(5L, 4L, 3L), ids);
            }
        });
        CHECKS.put("prepared update and delete", c -> {
            try (PreparedStatement ps = c.prepareStatement("UPDATE j_items SET qty = ? WHERE qty IS NULL")) {
                ps.setInt(1, 0);
                expectEq(3, ps.executeUpdate());
            }
            try (PreparedStatement ps = c.prepareStatement("UPDATE j_items SET name = ? WHERE id = ? RETURNING qty")) {
                ps.setString(1, "renamed");
                ps.setLong(2, 2);
                try (ResultSet rs = ps.executeQuery()) {
                    expect(rs.next(), "returning row");
                    expectEq(20, rs.getInt(1));
                }
            }
            try (PreparedStatement ps = c.prepareStatement("DELETE FROM j_items WHERE id > ?")) {
                ps.setLong(1, 8);
                expectEq(2, ps.executeUpdate());
            }
            expectEq(8L, count(c, "true"));
        });
        CHECKS.put("batch", c -> {
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO j_items (id, name) VALUES (?, ?)")) {
                for (int i = 100; i < 150; i++) {
                    ps.setLong(1, i);
                    ps.setString(2, "b" + i);
                    ps.addBatch();
                }
                int[] n = ps.executeBatch();
                expectEq(50, n.length);
                for (int k : n) expect(k == 1 || k == Statement.SUCCESS_NO_INFO, Arrays.toString(n));
            }
            expectEq(50L, count(c, "id >= 100 AND id < 150"));
            try (Statement st = c.createStatement()) {
                st.addBatch("UPDATE j_items SET qty = 1 WHERE id >= 100 AND id < 110");
                st.addBatch("DELETE FROM j_items WHERE id >= 140 AND id < 150");
                expectEq("[10, 10]", Arrays.toString(st.executeBatch()));
            }
            expectEq(40L, count(c, "id >= 100 AND id < 150"));
            // A failing batch: BatchUpdateException with the SQLSTATE, and nothing of it
            // stays: pgjdbc sends the batch as one group up to one Sync, which is one
            // implicit transaction (as in PostgreSQL).
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO j_items (id, name) VALUES (?, 'x')")) {
                for (long id : new long[] {200, 1, 201}) {
                    ps.setLong(1, id);
                    ps.addBatch();
                }
                ps.executeBatch();
                throw new AssertionError("batch did not fail");
            } catch (BatchUpdateException e) {
                expectEq("23505", e.getSQLState());
            }
            expectEq(0L, count(c, "id = 201"));
            expectEq(0L, count(c, "id = 200"));
        });
        CHECKS.put("procedure", c -> {
            try (Statement st = c.createStatement()) {
                st.execute("CREATE PROCEDURE j_bump(item BIGINT, n INTEGER) PARTITION ON item AS $$\n"
                        + "  UPDATE j_items SET qty = qty + $2 WHERE id = $1;\n"
                        + "  SELECT id, qty FROM j_items WHERE id = $1\n$$");
            }
            try (PreparedStatement ps = c.prepareStatement("CALL j_bump(?, ?)")) {
                ps.setLong(1, 1);
                ps.setInt(2, 5);
                try (ResultSet rs = ps.executeQuery()) {
                    expect(rs.next(), "procedure result");
                    expectEq(1L, rs.getLong("id"));
                    expectEq(15, rs.getInt("qty"));
                }
            }
            // JDBC escape syntax: with escapeSyntaxCallMode=call in the URL pgjdbc sends
            // CALL (its default, select, would send SELECT * FROM j_bump(...)).
            try (CallableStatement cs = c.prepareCall("{call j_bump(?, ?)}")) {
                cs.setLong(1, 1);
                cs.setInt(2, 1);
                cs.execute();
            }
            expectEq(1L, count(c, "id = 1 AND qty = 16"));
            expectState(c, "42883", "CALL j_nope(1)");
        });
        CHECKS.put("errors keep the connection usable", c -> {
            String[][] cases = {
                {"42601", "SELEC 1"},
                {"42P01", "SELECT * FROM j_nope"},
                {"23505", "INSERT INTO j_items (id, name) VALUES (1, 'dup')"},
                {"25P01", "SAVEPOINT a"},
                {"23502", "INSERT INTO j_items (id) VALUES (999)"},
            };
            for (String[] k : cases) {
                expectState(c, k[0], k[1]);
                expectEq(8L, count(c, "id < 100"));
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT * FROM j_items WHERE nope = ?")) {
                ps.setInt(1, 1);
                ps.executeQuery();
                throw new AssertionError("unknown column accepted");
            } catch (SQLException e) {
                expectEq("42703", e.getSQLState());
            }
            expectEq(8L, count(c, "id < 100"));
        });
        CHECKS.put("autocommit off: commit and rollback", c -> {
            // pgjdbc opens a transaction with BEGIN before the first statement.
            c.setAutoCommit(false);
            try (Statement st = c.createStatement()) {
                st.executeUpdate("INSERT INTO j_items (id, name) VALUES (700, 'tx')");
                expectEq(9L, count(c, "id < 100 OR id = 700"));
                c.commit();
                st.executeUpdate("DELETE FROM j_items WHERE id = 700");
                expectEq(8L, count(c, "id < 100 OR id = 700"));
                c.rollback();
                expectEq(9L, count(c, "id < 100 OR id = 700"));
                st.executeUpdate("DELETE FROM j_items WHERE id = 700");
                c.commit();
            } finally {
                c.setAutoCommit(true);
            }
            expectEq(8L, count(c, "id < 100 OR id = 700"));
            expectEq(Connection.TRANSACTION_SERIALIZABLE, c.getTransactionIsolation());
        });
        // DatabaseMetaData: pgjdbc's pg_catalog queries, answered from the server's catalog
        // relations (table-name patterns are LIKE patterns).
        CHECKS.put("DatabaseMetaData.getTables", c -> {
            DatabaseMetaData md = c.getMetaData();
            List<String> names = new ArrayList<>();
            try (ResultSet rs = md.getTables(null, null, "j_%", new String[] {"TABLE"})) {
                while (rs.next()) {
                    names.add(rs.getString("TABLE_NAME"));
                    expectEq("public", rs.getString("TABLE_SCHEM"));
                    expectEq("TABLE", rs.getString(4));  // TABLE_TYPE, by position
                }
            }
            expectEq(List.of("j_items"), names);
            expectEq(List.of(List.of("j_items_pkey", "INDEX")),
                    rows(md.getTables(null, "public", "j\\_items%", new String[] {"INDEX"}),
                            "TABLE_NAME", "TABLE_TYPE"));
            expectEq(List.of(), rows(md.getTables(null, "nope", "%", null), "TABLE_NAME"));
            expectEq(List.of(List.of("information_schema"), List.of("pg_catalog"), List.of("public")),
                    rows(md.getSchemas(), "TABLE_SCHEM"));
        });
        CHECKS.put("DatabaseMetaData.getColumns", c -> {
            List<String> names = new ArrayList<>();
            try (ResultSet rs = c.getMetaData().getColumns(null, "public", "j\\_items", "%")) {
                while (rs.next()) {
                    names.add(rs.getString("COLUMN_NAME"));
                    expectEq("j_items", rs.getString(3));  // TABLE_NAME, by position
                    expectEq(names.size(), rs.getInt("ORDINAL_POSITION"));
                }
            }
            expectEq(List.of("id", "name", "price", "qty", "seen", "ok", "data"), names);
            List<List<String>> cols = rows(c.getMetaData().getColumns(null, null, "j\\_items", null),
                    "COLUMN_NAME", "DATA_TYPE", "TYPE_NAME", "COLUMN_SIZE", "DECIMAL_DIGITS", "NULLABLE",
                    "IS_NULLABLE");
            expectEq(List.of("id", "" + Types.BIGINT, "int8", "19", "0", "0", "NO"), cols.get(0));
            expectEq(List.of("name", "" + Types.VARCHAR, "text", "2147483647", "0", "0", "NO"), cols.get(1));
            expectEq(List.of("price", "" + Types.NUMERIC, "numeric", "10", "2", "1", "YES"), cols.get(2));
            expectEq(List.of("qty", "" + Types.INTEGER, "int4", "10", "0", "1", "YES"), cols.get(3));
            expectEq(List.of("seen", "" + Types.TIMESTAMP, "timestamp"), cols.get(4).subList(0, 3));
            expectEq(List.of("ok", "" + Types.BIT, "bool"), cols.get(5).subList(0, 3));
            expectEq(List.of("data", "" + Types.BINARY, "bytea"), cols.get(6).subList(0, 3));
            // A column-name pattern: `_` is any one character.
            expectEq(List.of(List.of("id"), List.of("ok")),
                    rows(c.getMetaData().getColumns(null, null, "j_items", "__"), "COLUMN_NAME"));
        });
        CHECKS.put("DatabaseMetaData.getPrimaryKeys", c -> {
            try (ResultSet rs = c.getMetaData().getPrimaryKeys(null, "public", "j_items")) {
                expect(rs.next(), "a primary key row");
                expectEq("j_items", rs.getString("TABLE_NAME"));
                expectEq("id", rs.getString("COLUMN_NAME"));
                expectEq((short) 1, rs.getShort("KEY_SEQ"));
                expectEq("j_items_pkey", rs.getString(6));  // PK_NAME, by position
                expect(!rs.next(), "one key column");
            }
            expectEq(List.of(), rows(c.getMetaData().getPrimaryKeys(null, null, "j_nope"), "COLUMN_NAME"));
        });
        // With a parameter of unspecified type (setTimestamp sends one), pgjdbc's named
        // statement (from the 5th execution on: prepareThreshold) is described with
        // Describe(statement); an UPDATE must be described as NoData, or executeUpdate()
        // fails with "A result was returned when none was expected."
        CHECKS.put("arrays in and out, text and binary", c -> {
            try (Statement st = c.createStatement()) {
                st.execute("DROP TABLE IF EXISTS j_arrays");
                st.execute("CREATE TABLE j_arrays (id INTEGER PRIMARY KEY, tags TEXT[], n BIGINT[])");
            }
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO j_arrays VALUES (?, ?, ?)")) {
                for (int i = 1; i <= 7; i++) {
                    ps.setInt(1, i);
                    ps.setArray(2, c.createArrayOf("text", new String[] {"a" + i, "b c", null, "q\"x"}));
                    ps.setArray(3, c.createArrayOf("int8", new Long[] {(long) i, null, -1L}));
                    expectEq(1, ps.executeUpdate());
                }
            }
            // Past prepareThreshold the results come back in binary.
            try (PreparedStatement ps = c.prepareStatement("SELECT tags, n, tags[1], cardinality(n) FROM j_arrays WHERE id = ?")) {
                for (int i = 1; i <= 7; i++) {
                    ps.setInt(1, i);
                    try (ResultSet rs = ps.executeQuery()) {
                        expect(rs.next(), "row " + i);
                        expectEq(Arrays.asList("a" + i, "b c", null, "q\"x"),
                                Arrays.asList((Object[]) rs.getArray(1).getArray()));
                        expectEq(Arrays.asList((long) i, null, -1L), Arrays.asList((Object[]) rs.getArray(2).getArray()));
                        expectEq("a" + i, rs.getString(3));
                        expectEq(3, rs.getInt(4));
                    }
                }
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM j_arrays WHERE id = ANY(?)")) {
                ps.setArray(1, c.createArrayOf("int4", new Integer[] {1, 3, 99}));
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    expectEq(2L, rs.getLong(1));
                }
            }
            try (Statement st = c.createStatement()) {
                st.execute("CREATE INDEX j_arrays_tags ON j_arrays (tags)");
            }
            List<List<String>> idx = rows(c.getMetaData().getIndexInfo(null, null, "j_arrays", false, false),
                    "INDEX_NAME", "COLUMN_NAME", "NON_UNIQUE");
            expect(idx.contains(Arrays.asList("j_arrays_tags", "tags", "t")), idx);
            try (Statement st = c.createStatement()) {
                st.execute("DROP TABLE j_arrays");
            }
        });
        CHECKS.put("setTimestamp in a prepared UPDATE run 7 times", c -> {
            try (PreparedStatement ps = c.prepareStatement("UPDATE j_items SET seen = ? WHERE id = ?")) {
                for (int i = 0; i < 7; i++) {
                    ps.setTimestamp(1, Timestamp.valueOf("2024-03-01 00:00:00"));
                    ps.setLong(2, 1);
                    expectEq(1, ps.executeUpdate());
                }
            }
        });
    }

    /** The rows of a metadata result: the named columns of each row, as strings. */
    static List<List<String>> rows(ResultSet rs, String... columns) throws SQLException {
        List<List<String>> out = new ArrayList<>();
        try (rs) {
            while (rs.next()) {
                List<String> row = new ArrayList<>();
                for (String col : columns) row.add(rs.getString(col));
                out.add(row);
            }
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        url = "jdbc:postgresql://127.0.0.1:" + args[0]
                + "/permafrost?user=permafrost&connectTimeout=10&socketTimeout=60&escapeSyntaxCallMode=call";
        try (Connection c = connect(); Statement st = c.createStatement()) {
            st.execute("DROP PROCEDURE IF EXISTS j_bump");
            st.execute("DROP TABLE IF EXISTS j_items");
            st.execute("CREATE TABLE j_items (id BIGINT PRIMARY KEY, name TEXT NOT NULL, price NUMERIC(10,2), "
                    + "qty INTEGER, seen TIMESTAMP, ok BOOLEAN, data BYTEA) WITH (partition_by = 'id')");
        }
        int passed = 0, failed = 0;
        if (Boolean.getBoolean("gaps")) CHECKS.putAll(GAPS);
        for (Map.Entry<String, Check> e : CHECKS.entrySet()) {
            try (Connection c = connect()) {
                e.getValue().run(c);
                passed++;
                System.out.println("ok   " + e.getKey());
            } catch (Throwable t) {
                failed++;
                System.out.println("FAIL " + e.getKey() + ": " + t);
                t.printStackTrace(System.out);
            }
        }
        try (Connection c = connect(); Statement st = c.createStatement()) {
            st.execute("DROP PROCEDURE IF EXISTS j_bump");
            st.execute("DROP TABLE IF EXISTS j_items");
        }
        System.out.println("jdbc: " + passed + " passed, " + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }
}
