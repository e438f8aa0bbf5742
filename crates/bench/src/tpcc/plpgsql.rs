//! The five transactions as PostgreSQL's own stored procedures: PL/pgSQL functions with
//! the stored procedures' arguments (procs.rs), called with `SELECT * FROM name(...)`, one
//! call per transaction. The peer's best way of running TPC-C as stored procedures, to set
//! beside Permafrost's. Under READ COMMITTED the rows a transaction goes on to change are
//! read FOR UPDATE, as over the wire (txns.rs); an unused item raises "Item number is not
//! valid" (P0001), which rolls the call back.

/// `CREATE OR REPLACE FUNCTION` statements, in [`super::procs::NAMES`]' order.
pub const FUNCTIONS: [&str; 5] = [
    r#"CREATE OR REPLACE FUNCTION tpcc_new_order(p_w integer, p_d integer, p_c integer, p_items integer[],
    p_supply integer[], p_qty integer[])
RETURNS TABLE (r_o_id bigint, r_ol_cnt bigint, r_total_cents bigint) LANGUAGE plpgsql AS $$
DECLARE
    v_o integer;
    v_n integer := array_length(p_items, 1);
    v_price bigint;
    v_q integer;
    v_dist char(24);
    v_total bigint := 0;
BEGIN
    PERFORM c_discount, c_last, c_credit, w_tax FROM customer, warehouse
        WHERE w_id = p_w AND c_w_id = w_id AND c_d_id = p_d AND c_id = p_c;
    IF NOT FOUND THEN RAISE EXCEPTION 'no such customer'; END IF;
    UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = p_w AND d_id = p_d
        RETURNING d_next_o_id - 1 INTO v_o;
    INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
        VALUES (v_o, p_d, p_w, p_c, LOCALTIMESTAMP, NULL, v_n, CASE WHEN p_supply <@ ARRAY[p_w] THEN 1 ELSE 0 END);
    INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o, p_d, p_w);
    FOR i IN 1..v_n LOOP
        SELECT CAST(i_price * 100 AS bigint) INTO v_price FROM item WHERE i_id = p_items[i];
        IF NOT FOUND THEN RAISE EXCEPTION 'Item number is not valid'; END IF;
        SELECT s_quantity, CASE p_d WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03
            WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07
            WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09 ELSE s_dist_10 END
            INTO v_q, v_dist FROM stock WHERE s_i_id = p_items[i] AND s_w_id = p_supply[i] FOR UPDATE;
        UPDATE stock SET s_quantity = CASE WHEN v_q >= p_qty[i] + 10 THEN v_q - p_qty[i] ELSE v_q - p_qty[i] + 91 END,
            s_ytd = s_ytd + p_qty[i], s_order_cnt = s_order_cnt + 1,
            s_remote_cnt = s_remote_cnt + CASE WHEN p_supply[i] <> p_w THEN 1 ELSE 0 END
            WHERE s_i_id = p_items[i] AND s_w_id = p_supply[i];
        INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d,
            ol_quantity, ol_amount, ol_dist_info)
            VALUES (v_o, p_d, p_w, i, p_items[i], p_supply[i], NULL, p_qty[i], (p_qty[i] * v_price) * 0.01, v_dist);
        v_total := v_total + p_qty[i] * v_price;
    END LOOP;
    RETURN QUERY SELECT v_o::bigint, v_n::bigint, v_total;
END $$"#,
    r#"CREATE OR REPLACE FUNCTION tpcc_payment(p_w integer, p_d integer, p_c_w integer, p_c_d integer, p_c integer,
    p_c_last varchar, p_cents integer)
RETURNS TABLE (r_c_id bigint, r_bad_credit bigint) LANGUAGE plpgsql AS $$
DECLARE
    v_w_name varchar;
    v_d_name varchar;
    v_c integer := p_c;
    v_ids integer[];
    v_credit char(2);
    v_data varchar;
BEGIN
    UPDATE warehouse SET w_ytd = w_ytd + p_cents * 0.01 WHERE w_id = p_w RETURNING w_name INTO v_w_name;
    UPDATE district SET d_ytd = d_ytd + p_cents * 0.01 WHERE d_w_id = p_w AND d_id = p_d RETURNING d_name INTO v_d_name;
    IF v_c IS NULL THEN
        SELECT array_agg(c_id ORDER BY c_first) INTO v_ids FROM customer
            WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_last = p_c_last;
        IF v_ids IS NULL THEN RAISE EXCEPTION 'no customer is named %', p_c_last; END IF;
        v_c := v_ids[(array_length(v_ids, 1) - 1) / 2 + 1];
    END IF;
    SELECT c_credit INTO v_credit FROM customer WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c FOR UPDATE;
    IF NOT FOUND THEN RAISE EXCEPTION 'no such customer'; END IF;
    IF v_credit = 'BC' THEN
        SELECT c_data INTO v_data FROM customer WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
        v_data := left(format('%s %s %s %s %s %s.%s | %s', v_c, p_c_d, p_c_w, p_d, p_w, p_cents / 100,
            lpad((p_cents % 100)::text, 2, '0'), v_data), 500);
        UPDATE customer SET c_balance = c_balance - p_cents * 0.01, c_ytd_payment = c_ytd_payment + p_cents * 0.01,
            c_payment_cnt = c_payment_cnt + 1, c_data = v_data
            WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
    ELSE
        UPDATE customer SET c_balance = c_balance - p_cents * 0.01, c_ytd_payment = c_ytd_payment + p_cents * 0.01,
            c_payment_cnt = c_payment_cnt + 1
            WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
    END IF;
    INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
        VALUES (v_c, p_c_d, p_c_w, p_d, p_w, LOCALTIMESTAMP, p_cents * 0.01, v_w_name || '    ' || v_d_name);
    RETURN QUERY SELECT v_c::bigint, (v_credit = 'BC')::integer::bigint;
END $$"#,
    r#"CREATE OR REPLACE FUNCTION tpcc_order_status(p_w integer, p_d integer, p_c integer, p_c_last varchar)
RETURNS TABLE (r_i_id integer, r_supply_w_id integer, r_quantity integer, r_amount numeric, r_delivery_d timestamp)
LANGUAGE plpgsql AS $$
DECLARE
    v_c integer := p_c;
    v_ids integer[];
    v_o integer;
BEGIN
    IF v_c IS NULL THEN
        SELECT array_agg(c_id ORDER BY c_first) INTO v_ids FROM customer
            WHERE c_w_id = p_w AND c_d_id = p_d AND c_last = p_c_last;
        IF v_ids IS NULL THEN RAISE EXCEPTION 'no customer is named %', p_c_last; END IF;
        v_c := v_ids[(array_length(v_ids, 1) - 1) / 2 + 1];
    END IF;
    PERFORM c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = v_c;
    IF NOT FOUND THEN RAISE EXCEPTION 'no such customer'; END IF;
    SELECT o_id INTO v_o FROM orders WHERE o_w_id = p_w AND o_d_id = p_d AND o_c_id = v_c ORDER BY o_id DESC LIMIT 1;
    RETURN QUERY SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line
        WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id = v_o;
END $$"#,
    r#"CREATE OR REPLACE FUNCTION tpcc_delivery(p_w integer, p_carrier integer)
RETURNS TABLE (r_delivered bigint, r_skipped bigint) LANGUAGE plpgsql AS $$
DECLARE
    v_o integer;
    v_c integer;
    v_sum bigint;
    v_done bigint := 0;
    v_skipped bigint := 0;
BEGIN
    FOR v_d IN 1..10 LOOP
        SELECT no_o_id INTO v_o FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d
            ORDER BY no_o_id LIMIT 1 FOR UPDATE;
        IF NOT FOUND THEN v_skipped := v_skipped + 1; CONTINUE; END IF;
        DELETE FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d AND no_o_id = v_o;
        IF NOT FOUND THEN v_skipped := v_skipped + 1; CONTINUE; END IF;
        UPDATE orders SET o_carrier_id = p_carrier WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o
            RETURNING o_c_id INTO v_c;
        UPDATE order_line SET ol_delivery_d = LOCALTIMESTAMP WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o;
        SELECT CAST(SUM(ol_amount) * 100 AS bigint) INTO v_sum FROM order_line
            WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o;
        UPDATE customer SET c_balance = c_balance + coalesce(v_sum, 0) * 0.01, c_delivery_cnt = c_delivery_cnt + 1
            WHERE c_w_id = p_w AND c_d_id = v_d AND c_id = v_c;
        v_done := v_done + 1;
    END LOOP;
    RETURN QUERY SELECT v_done, v_skipped;
END $$"#,
    r#"CREATE OR REPLACE FUNCTION tpcc_stock_level(p_w integer, p_d integer, p_threshold integer)
RETURNS TABLE (r_low_stock bigint) LANGUAGE plpgsql AS $$
DECLARE
    v_next integer;
BEGIN
    SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w AND d_id = p_d;
    RETURN QUERY SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock
        WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id < v_next AND ol_o_id >= v_next - 20
        AND s_w_id = p_w AND s_i_id = ol_i_id AND s_quantity < p_threshold;
END $$"#,
];
