//! The five transactions as MariaDB's own stored procedures, one `CALL` per transaction:
//! the peer's best way of running TPC-C as stored procedures, to set beside Permafrost's
//! and PostgreSQL's (plpgsql.rs), with the same arguments. MariaDB has no arrays, so
//! New-Order's items, supplying warehouses and quantities arrive as JSON arrays. Each
//! procedure that writes runs inside START TRANSACTION ... COMMIT, reads FOR UPDATE the
//! rows it goes on to change, and rolls back on any error (an unused item raises "Item
//! number is not valid", SQLSTATE 45000). Each answers one result row.

/// `CREATE PROCEDURE` statements, in [`super::procs::NAMES`]' order.
pub const PROCEDURES: [&str; 5] = [
    "CREATE PROCEDURE tpcc_new_order(p_w INT, p_d INT, p_c INT, p_items TEXT, p_supply TEXT, p_qty TEXT)
BEGIN
    DECLARE v_o INT;
    DECLARE v_n INT DEFAULT JSON_LENGTH(p_items);
    DECLARE v_i INT DEFAULT 0;
    DECLARE v_item INT;
    DECLARE v_supply INT;
    DECLARE v_qty INT;
    DECLARE v_price BIGINT;
    DECLARE v_q INT;
    DECLARE v_dist CHAR(24);
    DECLARE v_total BIGINT DEFAULT 0;
    DECLARE v_local INT DEFAULT 1;
    DECLARE v_found INT;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
    START TRANSACTION;
    SELECT count(*) INTO v_found FROM customer, warehouse
        WHERE w_id = p_w AND c_w_id = w_id AND c_d_id = p_d AND c_id = p_c;
    IF v_found = 0 THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'no such customer'; END IF;
    SELECT d_next_o_id INTO v_o FROM district WHERE d_w_id = p_w AND d_id = p_d FOR UPDATE;
    UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = p_w AND d_id = p_d;
    WHILE v_i < v_n DO
        IF JSON_VALUE(p_supply, CONCAT('$[', v_i, ']')) <> p_w THEN SET v_local = 0; END IF;
        SET v_i = v_i + 1;
    END WHILE;
    INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
        VALUES (v_o, p_d, p_w, p_c, LOCALTIMESTAMP, NULL, v_n, v_local);
    INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o, p_d, p_w);
    SET v_i = 0;
    WHILE v_i < v_n DO
        SET v_item = JSON_VALUE(p_items, CONCAT('$[', v_i, ']'));
        SET v_supply = JSON_VALUE(p_supply, CONCAT('$[', v_i, ']'));
        SET v_qty = JSON_VALUE(p_qty, CONCAT('$[', v_i, ']'));
        SET v_price = NULL;
        SELECT CAST(i_price * 100 AS SIGNED) INTO v_price FROM item WHERE i_id = v_item;
        IF v_price IS NULL THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'Item number is not valid'; END IF;
        SELECT s_quantity, CASE p_d WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03
            WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06 WHEN 7 THEN s_dist_07
            WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09 ELSE s_dist_10 END
            INTO v_q, v_dist FROM stock WHERE s_i_id = v_item AND s_w_id = v_supply FOR UPDATE;
        UPDATE stock SET s_quantity = CASE WHEN v_q >= v_qty + 10 THEN v_q - v_qty ELSE v_q - v_qty + 91 END,
            s_ytd = s_ytd + v_qty, s_order_cnt = s_order_cnt + 1,
            s_remote_cnt = s_remote_cnt + CASE WHEN v_supply <> p_w THEN 1 ELSE 0 END
            WHERE s_i_id = v_item AND s_w_id = v_supply;
        INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d,
            ol_quantity, ol_amount, ol_dist_info)
            VALUES (v_o, p_d, p_w, v_i + 1, v_item, v_supply, NULL, v_qty, (v_qty * v_price) * 0.01, v_dist);
        SET v_total = v_total + v_qty * v_price;
        SET v_i = v_i + 1;
    END WHILE;
    COMMIT;
    SELECT v_o AS o_id, v_n AS ol_cnt, v_total AS total_cents;
END",
    "CREATE PROCEDURE tpcc_payment(p_w INT, p_d INT, p_c_w INT, p_c_d INT, p_c INT, p_c_last VARCHAR(16),
    p_cents INT)
BEGIN
    DECLARE v_w_name VARCHAR(10);
    DECLARE v_d_name VARCHAR(10);
    DECLARE v_c INT DEFAULT p_c;
    DECLARE v_n INT;
    DECLARE v_skip INT;
    DECLARE v_credit CHAR(2) DEFAULT NULL;
    DECLARE v_data VARCHAR(500);
    DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
    START TRANSACTION;
    UPDATE warehouse SET w_ytd = w_ytd + p_cents * 0.01 WHERE w_id = p_w;
    SELECT w_name INTO v_w_name FROM warehouse WHERE w_id = p_w;
    UPDATE district SET d_ytd = d_ytd + p_cents * 0.01 WHERE d_w_id = p_w AND d_id = p_d;
    SELECT d_name INTO v_d_name FROM district WHERE d_w_id = p_w AND d_id = p_d;
    IF v_c IS NULL THEN
        SELECT count(*) INTO v_n FROM customer WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_last = p_c_last;
        IF v_n = 0 THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'no customer has the last name'; END IF;
        SET v_skip = (v_n - 1) DIV 2;
        SELECT c_id INTO v_c FROM customer WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_last = p_c_last
            ORDER BY c_first LIMIT v_skip, 1;
    END IF;
    SELECT c_credit INTO v_credit FROM customer WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c FOR UPDATE;
    IF v_credit IS NULL THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'no such customer'; END IF;
    IF v_credit = 'BC' THEN
        SELECT c_data INTO v_data FROM customer WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
        SET v_data = LEFT(CONCAT(v_c, ' ', p_c_d, ' ', p_c_w, ' ', p_d, ' ', p_w, ' ', p_cents DIV 100, '.',
            LPAD(p_cents MOD 100, 2, '0'), ' | ', v_data), 500);
        UPDATE customer SET c_balance = c_balance - p_cents * 0.01, c_ytd_payment = c_ytd_payment + p_cents * 0.01,
            c_payment_cnt = c_payment_cnt + 1, c_data = v_data
            WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
    ELSE
        UPDATE customer SET c_balance = c_balance - p_cents * 0.01, c_ytd_payment = c_ytd_payment + p_cents * 0.01,
            c_payment_cnt = c_payment_cnt + 1
            WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
    END IF;
    INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
        VALUES (v_c, p_c_d, p_c_w, p_d, p_w, LOCALTIMESTAMP, p_cents * 0.01, CONCAT(v_w_name, '    ', v_d_name));
    COMMIT;
    SELECT v_c AS c_id, (v_credit = 'BC') AS bad_credit;
END",
    "CREATE PROCEDURE tpcc_order_status(p_w INT, p_d INT, p_c INT, p_c_last VARCHAR(16))
BEGIN
    DECLARE v_c INT DEFAULT p_c;
    DECLARE v_n INT;
    DECLARE v_skip INT;
    DECLARE v_o INT DEFAULT NULL;
    DECLARE v_balance DECIMAL(12,2) DEFAULT NULL;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
    START TRANSACTION READ ONLY;
    IF v_c IS NULL THEN
        SELECT count(*) INTO v_n FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_last = p_c_last;
        IF v_n = 0 THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'no customer has the last name'; END IF;
        SET v_skip = (v_n - 1) DIV 2;
        SELECT c_id INTO v_c FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_last = p_c_last
            ORDER BY c_first LIMIT v_skip, 1;
    END IF;
    SELECT c_balance INTO v_balance FROM customer WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = v_c;
    IF v_balance IS NULL THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'no such customer'; END IF;
    SELECT o_id INTO v_o FROM orders WHERE o_w_id = p_w AND o_d_id = p_d AND o_c_id = v_c ORDER BY o_id DESC LIMIT 1;
    SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line
        WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id = v_o;
    COMMIT;
END",
    "CREATE PROCEDURE tpcc_delivery(p_w INT, p_carrier INT)
BEGIN
    DECLARE v_d INT DEFAULT 1;
    DECLARE v_o INT;
    DECLARE v_c INT;
    DECLARE v_sum BIGINT;
    DECLARE v_done INT DEFAULT 0;
    DECLARE v_skipped INT DEFAULT 0;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
    START TRANSACTION;
    WHILE v_d <= 10 DO
        SET v_o = NULL;
        SELECT no_o_id INTO v_o FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d
            ORDER BY no_o_id LIMIT 1 FOR UPDATE;
        IF v_o IS NULL THEN
            SET v_skipped = v_skipped + 1;
        ELSE
            DELETE FROM new_order WHERE no_w_id = p_w AND no_d_id = v_d AND no_o_id = v_o;
            IF ROW_COUNT() = 0 THEN
                SET v_skipped = v_skipped + 1;
            ELSE
                SELECT o_c_id INTO v_c FROM orders WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o FOR UPDATE;
                UPDATE orders SET o_carrier_id = p_carrier WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o;
                UPDATE order_line SET ol_delivery_d = LOCALTIMESTAMP
                    WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o;
                SELECT CAST(SUM(ol_amount) * 100 AS SIGNED) INTO v_sum FROM order_line
                    WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o;
                UPDATE customer SET c_balance = c_balance + COALESCE(v_sum, 0) * 0.01,
                    c_delivery_cnt = c_delivery_cnt + 1
                    WHERE c_w_id = p_w AND c_d_id = v_d AND c_id = v_c;
                SET v_done = v_done + 1;
            END IF;
        END IF;
        SET v_d = v_d + 1;
    END WHILE;
    COMMIT;
    SELECT v_done AS delivered, v_skipped AS skipped;
END",
    "CREATE PROCEDURE tpcc_stock_level(p_w INT, p_d INT, p_threshold INT)
BEGIN
    DECLARE v_next INT;
    DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
    START TRANSACTION READ ONLY;
    SELECT d_next_o_id INTO v_next FROM district WHERE d_w_id = p_w AND d_id = p_d;
    SELECT COUNT(DISTINCT s_i_id) AS low_stock FROM order_line, stock
        WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id < v_next AND ol_o_id >= v_next - 20
        AND s_w_id = p_w AND s_i_id = ol_i_id AND s_quantity < p_threshold;
    COMMIT;
END",
];
