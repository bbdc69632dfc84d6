CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL, total REAL);
INSERT INTO orders (item, total) VALUES ('milk', 1.5), ('bread', 2.25);
