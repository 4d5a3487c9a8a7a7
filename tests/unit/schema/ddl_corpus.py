"""The DDL corpus: statements in the forms real users and tools write, each case a sequence.

The forms follow the statements in MySQL's reference manual (CREATE/ALTER/RENAME TABLE
examples), the DDL tests of canal (MemoryTableMeta, DdlParser), Debezium (its ANTLR parser's
tests and ddl/*.sql), Maxwell (src/test/resources/sql/ddl) and what gh-ost and
pt-online-schema-change run; written anew here. ``{db}`` is the current database (created
CHARACTER SET latin1), ``{db2}`` a second one (utf8mb4). What each server makes of them is
recorded by make_corpus.py in ddl_corpus_expected.json.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    name: str
    statements: tuple[str, ...]


def case(name: str, *statements: str) -> Case:
    return Case(name, statements)


_INTEGERS = [
    "tinyint", "tinyint(1)", "tinyint(2) unsigned", "smallint", "smallint unsigned",
    "mediumint", "mediumint(5) zerofill", "int", "int(11)", "int unsigned", "integer",
    "int(5) unsigned zerofill", "int zerofill", "bigint", "bigint(20) unsigned", "int1", "int2",
    "int3", "int4", "int8", "middleint", "bool", "boolean", "tinyint(1) unsigned", "bigint signed",
]  # fmt: skip
_NUMBERS = [
    "decimal", "decimal(5)", "decimal(10,2)", "decimal(65,30) unsigned", "numeric(8,3)",
    "dec(4,1)", "fixed(6,2)", "float", "float(10)", "float(30)", "float(7,3)", "float unsigned",
    "double", "double(10,2)", "double precision", "real", "float4", "float8", "bit", "bit(8)",
    "bit(64)",
]  # fmt: skip
_TEMPORAL = [
    "date", "time", "time(3)", "datetime", "datetime(6)", "datetime(0)", "timestamp NULL",
    "timestamp(3) NULL", "year", "year(4)",
]  # fmt: skip
_STRINGS = [
    "char", "char(10)", "varchar(255)", "character(3)", "char varying(12)",
    "character varying(12)", "varcharacter(7)", "nchar(10)", "national char(4)",
    "nvarchar(10)", "national varchar(5)", "nchar varchar(6)", "binary", "binary(16)",
    "varbinary(100)", "tinytext", "text", "mediumtext", "longtext", "text(100)", "text(1000)",
    "text(70000)", "tinyblob", "blob", "mediumblob", "longblob", "blob(100)", "blob(70000)",
    "long", "long varchar", "long varbinary", "char(5) binary", "varchar(10) ascii",
    "varchar(10) unicode", "char(3) byte", "varchar(10) character set utf8mb4",
    "varchar(10) charset utf8", "varchar(10) collate utf8mb4_bin",
    "varchar(10) character set latin2 collate latin2_bin", "varchar(10) character set binary",
    "char(4) character set binary", "text character set binary", "text charset utf8mb4",
    "mediumtext collate utf8mb4_unicode_ci", "enum('a','b','c')", "enum(\"x\",'y''z')",
    "enum('trailing  ','b') character set utf8mb4", "set('r','w','x')",
    "set('a','b') collate latin1_bin", "json",
]  # fmt: skip
_SPATIAL = [
    "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring",
    "multipolygon", "geometrycollection",
]  # fmt: skip
_TYPES = _INTEGERS + _NUMBERS + _TEMPORAL + _STRINGS + _SPATIAL

CASES: list[Case] = []
# Every type, created then added then modified: three statements per type.
for _index, _type in enumerate(_TYPES):
    CASES.append(
        case(
            f"type_{_index:03d}_{_type.split('(')[0].replace(' ', '_')}",
            f"CREATE TABLE t (id int NOT NULL PRIMARY KEY, c {_type})",
            f"ALTER TABLE t ADD COLUMN d {_type} AFTER id",
            f"ALTER TABLE t MODIFY COLUMN c {_type} NOT NULL FIRST",
        )
    )

CASES += [
    # --- CREATE TABLE: attributes, constraints, options ------------------------------------
    case(
        "create_attributes",
        """CREATE TABLE IF NOT EXISTS `orders` (
          `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT COMMENT 'key',
          `sku` varchar(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
          `qty` int(11) NOT NULL DEFAULT '0',
          `price` decimal(12,2) DEFAULT NULL,
          `note` text,
          `created` datetime NOT NULL DEFAULT CURRENT_TIMESTAMP,
          `updated` timestamp(3) NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
          PRIMARY KEY (`id`),
          UNIQUE KEY `uk_sku` (`sku`),
          KEY `idx_created` (`created`) USING BTREE
        ) ENGINE=InnoDB AUTO_INCREMENT=1000 DEFAULT CHARSET=utf8mb4 COMMENT='orders'""",
        "CREATE TABLE IF NOT EXISTS orders (x int)",
    ),
    case(
        "create_inline_keys",
        "CREATE TABLE a (id int AUTO_INCREMENT PRIMARY KEY, code char(3) UNIQUE KEY,"
        " k int UNIQUE DEFAULT 5)",
        "CREATE TABLE b (k int KEY DEFAULT 5, v int)",
    ),
    case(
        "create_composite_pk",
        "CREATE TABLE membership (user_id int, group_id int, since date,"
        " CONSTRAINT pk_m PRIMARY KEY (group_id, user_id))",
        "ALTER TABLE membership DROP PRIMARY KEY, ADD PRIMARY KEY (user_id, group_id)",
    ),
    case(
        "create_foreign_keys",
        "CREATE TABLE parent (id int NOT NULL, PRIMARY KEY (id)) ENGINE=InnoDB",
        "CREATE TABLE child (id int, parent_id int, INDEX par_ind (parent_id),"
        " FOREIGN KEY (parent_id) REFERENCES parent(id) ON DELETE CASCADE ON UPDATE SET NULL)",
        "CREATE TABLE child2 (id int PRIMARY KEY, p int REFERENCES parent(id))",
    ),
    case(
        "create_checks_mariadb",
        "CREATE TABLE t1 (c1 int CHECK (c1 > 10), c2 int, CONSTRAINT c1_nonzero CHECK (c1 <> 0),"
        " CHECK (c1 > c2))",
        "ALTER TABLE t1 DROP CONSTRAINT c1_nonzero",
    ),
    case(
        "create_checks",
        "CREATE TABLE t1 (c1 int CHECK (c1 > 10), c2 int CONSTRAINT c2_positive CHECK (c2 > 0),"
        " c3 int CHECK (c3 < 100), CONSTRAINT c1_nonzero CHECK (c1 <> 0), CHECK (c1 > c3))",
    ),
    case(
        "create_generated",
        "CREATE TABLE triangle (sidea double, sideb double,"
        " sidec double AS (SQRT(sidea * sidea + sideb * sideb)))",
        "CREATE TABLE g (a int, b int GENERATED ALWAYS AS (a + 1) VIRTUAL,"
        " c varchar(20) GENERATED ALWAYS AS (concat(a, 'x')) STORED NOT NULL,"
        " d int AS (a * 2) STORED COMMENT 'twice')",
    ),
    case(
        "create_generated_mariadb",
        "CREATE TABLE g (a int, b int GENERATED ALWAYS AS (a + 1) VIRTUAL,"
        " c varchar(20) GENERATED ALWAYS AS (concat(a, 'x')) STORED,"
        " d int AS (a * 2) STORED COMMENT 'twice', e int AS (a) VIRTUAL INVISIBLE)",
    ),
    case(
        "create_generated_persistent",
        "CREATE TABLE p (a int, b int AS (a + 1) PERSISTENT)",
    ),
    case(
        "create_invisible",
        "CREATE TABLE inv (id int PRIMARY KEY, secret varchar(10) INVISIBLE, v int)",
        "ALTER TABLE inv MODIFY v int INVISIBLE",
        "ALTER TABLE inv ALTER COLUMN secret SET VISIBLE, ALTER COLUMN v SET INVISIBLE",
        "ALTER TABLE inv ADD COLUMN h int INVISIBLE FIRST",
    ),
    case(
        "create_defaults",
        "CREATE TABLE d (a int DEFAULT -1, b double DEFAULT +1.5e3, c varchar(5) DEFAULT 'x' 'y',"
        " e bit(4) DEFAULT b'0101', f varbinary(4) DEFAULT x'0a0b', g char(2) DEFAULT _latin1'ab',"
        " h int DEFAULT (1 + 2), i varchar(36) DEFAULT (uuid()), j boolean DEFAULT TRUE,"
        " k datetime(6) DEFAULT NOW(6) ON UPDATE NOW(6), l date DEFAULT (CURRENT_DATE))",
    ),
    case(
        "create_serial",
        "CREATE TABLE s (id serial, name varchar(10))",
    ),
    case(
        "create_options",
        "CREATE TABLE o (a int) ENGINE = MyISAM ROW_FORMAT=DYNAMIC CHECKSUM=1"
        " COMMENT = 'options' MAX_ROWS=100 MIN_ROWS=1 PACK_KEYS=DEFAULT DELAY_KEY_WRITE=1",
        "CREATE TABLE o2 (a varchar(3)) ENGINE=InnoDB, DEFAULT CHARACTER SET = utf8mb4,"
        " COLLATE = utf8mb4_unicode_ci, STATS_PERSISTENT=0, KEY_BLOCK_SIZE=8",
        "CREATE TABLE o3 (a varchar(3)) COLLATE latin2_general_ci",
        "CREATE TABLE o4 (a text, b char(2) CHARACTER SET utf8mb4) CHARSET ucs2",
    ),
    case(
        "create_partitioned",
        "CREATE TABLE pr (id int NOT NULL, created date NOT NULL, PRIMARY KEY (id, created))"
        " PARTITION BY RANGE (YEAR(created)) (PARTITION p0 VALUES LESS THAN (2020),"
        " PARTITION p1 VALUES LESS THAN MAXVALUE)",
        "ALTER TABLE pr REORGANIZE PARTITION p1 INTO (PARTITION p1 VALUES LESS THAN (2030),"
        " PARTITION p2 VALUES LESS THAN MAXVALUE)",
        "ALTER TABLE pr DROP PARTITION p0",
        "ALTER TABLE pr TRUNCATE PARTITION p1, p2",
        "ALTER TABLE pr REMOVE PARTITIONING",
        "ALTER TABLE pr PARTITION BY HASH(id) PARTITIONS 4",
        "ALTER TABLE pr COALESCE PARTITION 2",
    ),
    case(
        "create_fulltext_spatial",
        "CREATE TABLE ft (id int PRIMARY KEY, body text, pt point NOT NULL,"
        " FULLTEXT KEY ft_body (body), SPATIAL INDEX sp (pt)) ENGINE=InnoDB",
    ),
    case(
        "create_quoted_names",
        "CREATE TABLE `we``ird table` (`select` int, `from` varchar(3), `col-umn` int)",
        "ALTER TABLE `we``ird table` CHANGE `select` `where` bigint, RENAME COLUMN `from` TO `to`",
        "RENAME TABLE `we``ird table` TO plain",
    ),
    case(
        "create_comments",
        "CREATE TABLE /* a comment */ c1 ( -- line comment\n a int, # hash comment\n"
        " /*!50503 b varchar(3), */ c int /* , d int */)",
        "/*!40101 ALTER TABLE c1 ADD COLUMN e int */",
    ),
    case(
        "create_other_database",
        "CREATE TABLE {db2}.t (a varchar(5), b text)",
        "ALTER TABLE {db2}.t ADD COLUMN c char(2)",
        "RENAME TABLE {db2}.t TO {db}.t",
        "ALTER TABLE t ADD COLUMN d char(2)",
    ),
    case(
        "create_like",
        "CREATE TABLE src (id int PRIMARY KEY, v varchar(5)) DEFAULT CHARSET=utf8mb4",
        "CREATE TABLE dst LIKE src",
        "CREATE TABLE {db2}.dst2 (LIKE {db}.src)",
        "CREATE TABLE IF NOT EXISTS dst LIKE src",
    ),
    case(
        "create_or_replace",
        "CREATE TABLE r (a int)",
        "CREATE OR REPLACE TABLE r (b bigint, c text)",
    ),
    case(
        "create_timestamps",
        "CREATE TABLE ts (a timestamp, b timestamp, c timestamp NULL, d timestamp NOT NULL"
        " DEFAULT '2020-01-01 00:00:00')",
    ),
    case(
        "create_auto_increment_key",
        "CREATE TABLE ai (a int AUTO_INCREMENT, b int, KEY (a))",
    ),
    case(
        "create_unique_not_null",
        "CREATE TABLE u (a int NOT NULL, b int, UNIQUE KEY (a))",
    ),
    case(
        "create_pk_prefix",
        "CREATE TABLE pp (name varchar(200), other int, PRIMARY KEY (name(20), other DESC))",
    ),
    case(
        "create_index_statements",
        "CREATE TABLE ix (a int NOT NULL, b varchar(10), c int)",
        "CREATE INDEX ib ON ix (b(5))",
        "CREATE UNIQUE INDEX ia USING BTREE ON ix (a)",
        "DROP INDEX ib ON ix",
        "ALTER TABLE ix ADD PRIMARY KEY (a)",
        "DROP INDEX `PRIMARY` ON ix",
    ),
    case(
        "create_vector_mysql",
        "CREATE TABLE vec (id int PRIMARY KEY, v vector(3))",
    ),
    case(
        "create_mariadb_types",
        "CREATE TABLE mt (id uuid, a inet6, b inet4)",
    ),
    case(
        "create_json_table_charset",
        "CREATE TABLE j (a json, b varchar(3)) DEFAULT CHARSET=latin1",
    ),
    # --- ALTER TABLE ---------------------------------------------------------------------
    case(
        "alter_add_positions",
        "CREATE TABLE t (a int, b int, c int)",
        "ALTER TABLE t ADD x int FIRST",
        "ALTER TABLE t ADD COLUMN y varchar(3) AFTER a",
        "ALTER TABLE t ADD z int, ADD w int AFTER x, ADD v int FIRST",
        "ALTER TABLE t ADD COLUMN (p int, q char(2))",
        "ALTER TABLE t ADD (r int NOT NULL, s text, INDEX (r))",
    ),
    case(
        "alter_drop",
        "CREATE TABLE t (a int, b int, c int, d int, PRIMARY KEY (a, b))",
        "ALTER TABLE t DROP COLUMN d",
        "ALTER TABLE t DROP c, DROP b",
        "ALTER TABLE t ADD e int, DROP COLUMN a",
    ),
    case(
        "alter_drop_last_pk_columns",
        "CREATE TABLE t (a int, b int, c int, PRIMARY KEY (a, b))",
        "ALTER TABLE t DROP a, DROP b",
    ),
    case(
        "alter_drop_pk_column",
        "CREATE TABLE t (a int, b int, c int, PRIMARY KEY (a))",
        "ALTER TABLE t DROP COLUMN a",
    ),
    case(
        "alter_modify_change",
        "CREATE TABLE t (a int NOT NULL, b varchar(10), c int, PRIMARY KEY (a))",
        "ALTER TABLE t MODIFY b varchar(20) NOT NULL",
        "ALTER TABLE t MODIFY COLUMN c bigint unsigned FIRST",
        "ALTER TABLE t CHANGE b bb varchar(30) AFTER c",
        "ALTER TABLE t CHANGE COLUMN a id bigint AUTO_INCREMENT",
        "ALTER TABLE t MODIFY id int",
        "ALTER TABLE t CHANGE c c int NULL DEFAULT 3 AFTER bb",
    ),
    case(
        "alter_rename_column",
        "CREATE TABLE t (a int PRIMARY KEY, b int)",
        "ALTER TABLE t RENAME COLUMN a TO id, RENAME COLUMN b TO a",
        "ALTER TABLE t RENAME COLUMN a TO B",
    ),
    case(
        "alter_defaults",
        "CREATE TABLE t (a int DEFAULT 1, b varchar(3) NOT NULL)",
        "ALTER TABLE t ALTER COLUMN a SET DEFAULT 2, ALTER b SET DEFAULT 'x'",
        "ALTER TABLE t ALTER a DROP DEFAULT",
        "ALTER TABLE t ALTER COLUMN b SET DEFAULT (concat('a', 'b'))",
    ),
    case(
        "alter_primary_key",
        "CREATE TABLE t (a int, b int, c varchar(5))",
        "ALTER TABLE t ADD PRIMARY KEY (b, a)",
        "ALTER TABLE t DROP PRIMARY KEY",
        "ALTER TABLE t ADD CONSTRAINT pk PRIMARY KEY USING BTREE (c)",
        "ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (a), MODIFY c varchar(5) NULL",
    ),
    case(
        "alter_indexes",
        "CREATE TABLE t (a int, b varchar(10), c int)",
        "ALTER TABLE t ADD INDEX ib (b), ADD UNIQUE KEY uc (c), ADD FULLTEXT INDEX ft (b)",
        "ALTER TABLE t DROP INDEX ib, DROP KEY uc, ADD KEY k2 (a, c)",
        "ALTER TABLE t RENAME INDEX k2 TO k3",
        "ALTER TABLE t ADD CONSTRAINT chk CHECK (a > 0)",
        "ALTER TABLE t DROP CHECK chk",
    ),
    case(
        "alter_foreign_keys",
        "CREATE TABLE p (id int PRIMARY KEY)",
        "CREATE TABLE c (id int PRIMARY KEY, pid int)",
        "ALTER TABLE c ADD CONSTRAINT fk_p FOREIGN KEY (pid) REFERENCES p (id) ON DELETE RESTRICT",
        "ALTER TABLE c DROP FOREIGN KEY fk_p",
    ),
    case(
        "alter_convert_utf8mb4",
        "CREATE TABLE t (a tinytext, b text, c mediumtext, d longtext, e varchar(10),"
        " f enum('x','y'), g char(3), h blob, i int) DEFAULT CHARSET=latin1",
        "ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4",
    ),
    case(
        "alter_convert_narrow",
        "CREATE TABLE t (a tinytext, b text, c mediumtext, e varchar(10)) DEFAULT CHARSET=utf8mb4",
        "ALTER TABLE t CONVERT TO CHARSET latin1 COLLATE latin1_bin",
    ),
    case(
        "alter_convert_utf8",
        "CREATE TABLE t (a tinytext, b text, v varchar(20)) CHARSET=latin1",
        "ALTER TABLE t CONVERT TO CHARACTER SET utf8",
        "ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
    ),
    case(
        "alter_convert_binary",
        "CREATE TABLE t (a char(3), b varchar(10), c text, d int)",
        "ALTER TABLE t CONVERT TO CHARACTER SET binary",
    ),
    case(
        "alter_default_charset",
        "CREATE TABLE t (a varchar(10))",
        "ALTER TABLE t DEFAULT CHARACTER SET utf8mb4",
        "ALTER TABLE t ADD b varchar(10)",
        "ALTER TABLE t CHARACTER SET = latin2, ADD c text",
        "ALTER TABLE t COLLATE utf8mb4_bin",
        "ALTER TABLE t MODIFY a varchar(10)",
    ),
    case(
        "alter_table_options",
        "CREATE TABLE t (a int, b int)",
        "ALTER TABLE t ENGINE=InnoDB",
        "ALTER TABLE t ENGINE = InnoDB, ALGORITHM=INPLACE, LOCK=NONE",
        "ALTER TABLE t COMMENT = 'hello', AUTO_INCREMENT = 10, ROW_FORMAT=COMPACT",
        "ALTER TABLE t FORCE",
        "ALTER TABLE t ORDER BY b, a",
        "ALTER TABLE t ALGORITHM=COPY, ADD c int",
        "ALTER TABLE t STATS_PERSISTENT = 1, KEY_BLOCK_SIZE = 0",
    ),
    case(
        "alter_rename_table",
        "CREATE TABLE t1 (a int)",
        "ALTER TABLE t1 RENAME TO t2",
        "ALTER TABLE t2 RENAME AS t3, ADD b int",
        "ALTER TABLE t3 RENAME {db2}.t4",
        "ALTER TABLE {db2}.t4 RENAME TO {db}.t5, MODIFY a bigint",
    ),
    case(
        "alter_online_ignore",
        "CREATE TABLE t (a int, b int)",
        "ALTER ONLINE TABLE t ADD c int",
        "ALTER IGNORE TABLE t ADD UNIQUE (a)",
    ),
    case(
        "alter_if_exists_mariadb",
        "CREATE TABLE t (a int, b int)",
        "ALTER TABLE t ADD COLUMN IF NOT EXISTS a int, ADD COLUMN IF NOT EXISTS c int",
        "ALTER TABLE t DROP COLUMN IF EXISTS zz, DROP COLUMN IF EXISTS b",
        "ALTER TABLE t MODIFY COLUMN IF EXISTS zz int, MODIFY COLUMN IF EXISTS c bigint",
        "ALTER TABLE t CHANGE COLUMN IF EXISTS c d int FIRST",
        "ALTER TABLE IF EXISTS t ADD e int",
        "ALTER TABLE t ADD INDEX IF NOT EXISTS ia (a), DROP INDEX IF EXISTS ia",
    ),
    case(
        "alter_many_clauses",
        "CREATE TABLE t (id int NOT NULL, name varchar(10), age int, PRIMARY KEY (id))",
        "ALTER TABLE t ADD COLUMN email varchar(255) NOT NULL AFTER id, MODIFY age tinyint"
        " unsigned, CHANGE name full_name varchar(100) CHARACTER SET utf8mb4, DROP PRIMARY KEY,"
        " ADD PRIMARY KEY (id, email), ADD INDEX (age), ENGINE=InnoDB",
    ),
    case(
        "alter_enum_labels",
        "CREATE TABLE t (s enum('a','b'), z set('x','y'))",
        "ALTER TABLE t MODIFY s enum('a','b','c')",
        "ALTER TABLE t MODIFY s enum('c','a','b') NOT NULL DEFAULT 'c'",
        "ALTER TABLE t MODIFY z set('x','y','it''s') CHARACTER SET utf8mb4",
    ),
    case(
        "alter_generated",
        "CREATE TABLE t (a int, b int)",
        "ALTER TABLE t ADD COLUMN c int AS (a + b) VIRTUAL",
        "ALTER TABLE t ADD COLUMN d int GENERATED ALWAYS AS (a * b) STORED AFTER a",
        "ALTER TABLE t MODIFY c bigint AS (a - b) VIRTUAL",
        "ALTER TABLE t DROP COLUMN d",
    ),
    # --- RENAME, DROP, TRUNCATE ----------------------------------------------------------
    case(
        "rename_pairs",
        "CREATE TABLE a (x int)",
        "CREATE TABLE b (y int)",
        "RENAME TABLE a TO tmp, b TO a, tmp TO b",
        "RENAME TABLE a TO {db2}.a, b TO {db2}.b",
    ),
    case(
        "gh_ost",
        "CREATE TABLE `sales` (`id` int NOT NULL, `total` decimal(10,2), PRIMARY KEY (`id`))",
        "create /* gh-ost */ table `{db}`.`_sales_gho` like `{db}`.`sales`",
        "alter /* gh-ost */ table `{db}`.`_sales_gho` add column region varchar(16) not null"
        " default ''",
        "create /* gh-ost */ table `{db}`.`_sales_ghc` (\n id bigint auto_increment,\n"
        " last_update timestamp not null DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,\n"
        " hint varchar(64) charset ascii not null,\n value varchar(4096) charset ascii not null,"
        "\n primary key(id),\n unique key hint_uidx(hint)\n ) auto_increment=256",
        "rename /* gh-ost */ table `{db}`.`sales` to `{db}`.`_sales_del`,"
        " `{db}`.`_sales_gho` to `{db}`.`sales`",
        "drop /* gh-ost */ table if exists `{db}`.`_sales_del`",
        "drop /* gh-ost */ table if exists `{db}`.`_sales_ghc`",
    ),
    case(
        "pt_online_schema_change",
        "CREATE TABLE `items` (`id` int NOT NULL AUTO_INCREMENT, `name` varchar(20),"
        " PRIMARY KEY (`id`)) ENGINE=InnoDB",
        "CREATE TABLE `{db}`.`_items_new` (`id` int NOT NULL AUTO_INCREMENT, `name`"
        " varchar(20), PRIMARY KEY (`id`)) ENGINE=InnoDB",
        "ALTER TABLE `{db}`.`_items_new` MODIFY name varchar(40) NOT NULL, ADD qty int",
        "RENAME TABLE `{db}`.`items` TO `{db}`.`_items_old`, `{db}`.`_items_new` TO `{db}`.`items`",
        "DROP TABLE IF EXISTS `{db}`.`_items_old`",
    ),
    case(
        "drop_tables",
        "CREATE TABLE a (x int)",
        "CREATE TABLE b (x int)",
        "CREATE TABLE c (x int)",
        "DROP TABLE a, b",
        "DROP TABLE IF EXISTS c, nonexistent",
    ),
    case(
        "truncate",
        "CREATE TABLE t (x int)",
        "TRUNCATE TABLE t",
        "TRUNCATE t",
    ),
    # --- databases ---------------------------------------------------------------------
    case(
        "databases",
        "CREATE DATABASE IF NOT EXISTS {db2}",
        "ALTER DATABASE {db2} CHARACTER SET latin2",
        "CREATE TABLE {db2}.t (a varchar(3), b text)",
        "ALTER DATABASE {db2} DEFAULT CHARACTER SET = utf8mb4 DEFAULT COLLATE = utf8mb4_bin",
        "CREATE TABLE {db2}.u (a varchar(3))",
        "ALTER TABLE {db2}.t ADD c char(1)",
        "ALTER DATABASE CHARACTER SET utf8mb4",
        "CREATE TABLE v (a char(1))",
    ),
    case(
        "drop_database",
        "CREATE TABLE {db2}.t (a int)",
        "CREATE TABLE {db2}.u (a int)",
        "DROP DATABASE {db2}",
        "CREATE DATABASE {db2} COLLATE latin1_bin",
        "CREATE TABLE {db2}.w (a char(2))",
    ),
    # --- forms from the projects' test suites ---------------------------------------------
    case(
        "maxwell_style",
        "create table shard_1 ( id int(11) auto_increment not null primary key,"
        " account_id int(11), nice_id int(11), status varchar(255), date_field datetime,"
        " text_field text, latin1_field varchar(96) character set latin1 not null default '',"
        " utf8_field varchar(96) character set utf8 not null default '', float_field float(5,2),"
        " timestamp_field timestamp default current_timestamp,"
        " timestamp2_field timestamp(6) default current_timestamp(6), datetime2_field"
        " datetime(6), time2_field time(6), decimal_field decimal(12,7)) engine=innodb",
        "alter table shard_1 add column new_col int(11) after account_id",
        "alter table shard_1 drop column nice_id, add column `nice_id2` bigint default 0 first",
        "alter table shard_1 change column status status2 enum('a','b') default 'a'",
        "alter table shard_1 modify column text_field mediumtext character set utf8mb4",
    ),
    case(
        "debezium_style",
        "CREATE TABLE foo ( c1 INTEGER NOT NULL, c2 VARCHAR(22) )",
        "ALTER TABLE foo ADD COLUMN c3 DOUBLE PRECISION NOT NULL DEFAULT 0,"
        " ADD COLUMN c4 NATIONAL CHARACTER VARYING(10)",
        "ALTER TABLE foo MODIFY COLUMN c2 CHAR(10) CHARACTER SET utf8mb4 COLLATE"
        " utf8mb4_unicode_ci NOT NULL",
        "ALTER TABLE foo ADD PRIMARY KEY (c1)",
        "CREATE TABLE products_on_hand (product_id INTEGER NOT NULL PRIMARY KEY,"
        " quantity INTEGER NOT NULL, FOREIGN KEY (product_id) REFERENCES foo(c1))",
        "CREATE TABLE `t2` (`col1` BIGINT UNSIGNED, `col2` MEDIUMINT(8) UNSIGNED ZEROFILL,"
        " `col3` BIT(3), `col4` SET('1','2','3') CHARACTER SET utf8mb4 COLLATE"
        " utf8mb4_general_ci NOT NULL)",
    ),
    case(
        "canal_style",
        "CREATE TABLE `test_ddl` (\n  `id` int(10) unsigned NOT NULL AUTO_INCREMENT,\n"
        "  `name` varchar(32) NOT NULL DEFAULT '' COMMENT 'the name',\n"
        "  `is_deleted` tinyint(4) NOT NULL DEFAULT '0',\n"
        "  `gmt_create` datetime NOT NULL,\n  PRIMARY KEY (`id`)\n"
        ") ENGINE=InnoDB AUTO_INCREMENT=3 DEFAULT CHARSET=utf8mb4 ROW_FORMAT=COMPACT",
        "alter table test_ddl add column `price` decimal(10, 2) unsigned not null default 0"
        " comment 'price' after name",
        "ALTER TABLE `test_ddl` CHANGE COLUMN `is_deleted` `deleted` bit(1) NOT NULL",
        "alter table test_ddl drop column gmt_create, add column gmt_modified timestamp null",
        "rename table test_ddl to test_ddl_new",
        "truncate table test_ddl_new",
        "drop table test_ddl_new",
    ),
    case(
        "manual_examples",
        "CREATE TABLE t1 (a INTEGER, b CHAR(10))",
        "ALTER TABLE t1 RENAME t2",
        "ALTER TABLE t2 MODIFY a TINYINT NOT NULL, CHANGE b c CHAR(20)",
        "ALTER TABLE t2 ADD d TIMESTAMP NULL",
        "ALTER TABLE t2 ADD INDEX (d), ADD UNIQUE (a)",
        "ALTER TABLE t2 DROP COLUMN c",
        "ALTER TABLE t2 ADD c INT UNSIGNED NOT NULL AUTO_INCREMENT, ADD PRIMARY KEY (c)",
    ),
    case(
        "ctas",
        "CREATE TABLE src (a int, b varchar(3))",
        "CREATE TABLE copy_with (x int) SELECT a, b FROM src",
    ),
    case(
        "ctas_plain",
        "CREATE TABLE src (a int, b varchar(3))",
        "CREATE TABLE copy_plain AS SELECT a, b FROM src",
    ),
    case(
        "system_table_forms",
        "CREATE TABLE IF NOT EXISTS tz (Time_zone_id int unsigned NOT NULL, Transition_time"
        " bigint signed NOT NULL, Abbreviation char(8) DEFAULT '' NOT NULL, PRIMARY KEY TzId"
        " (Time_zone_id, Transition_time)) engine=MyISAM CHARACTER SET utf8 comment='zones'",
        "CREATE TABLE IF NOT EXISTS rel (topic int unsigned not null references help_topic (id),"
        " keyword int unsigned not null references help_keyword (id), primary key (keyword, topic))"
        " engine=MyISAM CHARACTER SET utf8",
        "CREATE TABLE stats (last_update TIMESTAMP NOT NULL NOT NULL DEFAULT CURRENT_TIMESTAMP"
        " ON UPDATE CURRENT_TIMESTAMP, n_rows BIGINT UNSIGNED NOT NULL, name VARCHAR(64)"
        " NOT NULL, PRIMARY KEY (name)) ENGINE=INNODB DEFAULT CHARSET=utf8 COLLATE=utf8_bin"
        " STATS_PERSISTENT=0",
        'ALTER TABLE stats AVG_ROW_LENGTH=0 CHECKSUM=0 COMMENT="" MIN_ROWS=0 MAX_ROWS=0'
        " PACK_KEYS=DEFAULT DELAY_KEY_WRITE=0 ROW_FORMAT=default",
        "ALTER TABLE stats ORDER BY stats.n_rows, stats.name",
        "ALTER TABLE tz CHANGE Abbreviation abbr CHAR(8) UNICODE NOT NULL, RENAME tz2",
        "ALTER TABLE rel ADD bin_f CHAR(1) BYTE NOT NULL default ''",
    ),
    case(
        "timestamp_columns_added",
        "CREATE TABLE t1 (a int)",
        "ALTER TABLE t1 ADD a0 VARCHAR(32), ADD d0 TIMESTAMP(0) NOT NULL DEFAULT"
        " CURRENT_TIMESTAMP(0) ON UPDATE CURRENT_TIMESTAMP(0), ADD d1 TIMESTAMP(1),"
        " ADD d6 TIMESTAMP(6), ADD d TIMESTAMP",
        "ALTER TABLE t1 MODIFY a DATETIME(6), MODIFY d1 TIMESTAMP(6) NOT NULL DEFAULT"
        " CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6)",
    ),
    case(
        "spatial_added",
        "CREATE TABLE t1 (a int)",
        "ALTER TABLE t1 ADD b GEOMETRY NOT NULL, ADD SPATIAL INDEX(b)",
        "ALTER TABLE t1 ADD c POINT, ADD e geomcollection",
    ),
    case(
        "charset_modify",
        "CREATE TABLE t (latin1_text_col TEXT, latin1_varchar_col VARCHAR(30), c1 int)"
        " CHARSET latin1",
        "ALTER TABLE t MODIFY latin1_text_col TEXT CHARACTER SET utf8",
        "ALTER TABLE t MODIFY latin1_varchar_col VARCHAR(30) CHARACTER SET utf8",
        "ALTER TABLE t CHANGE c1 c1 BLOB",
        "ALTER TABLE t CHANGE c1 c1 TEXT CHARACTER SET utf8",
    ),
]
