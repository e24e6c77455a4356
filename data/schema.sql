-- The profile store, exactly as docs/store.md describes it.
-- The platform owns this schema; profile-snapshot only reads it.
-- Foreign keys are declared but, as in SQLite by default, not enforced: the generator must cope
-- with dangling references (the sample has one).

CREATE TABLE decorations (
  id   TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  file TEXT NOT NULL
);

CREATE TABLE users (
  id            INTEGER PRIMARY KEY,
  username      TEXT NOT NULL UNIQUE COLLATE NOCASE,
  display_name  TEXT NOT NULL,
  bio           TEXT NOT NULL,
  custom_domain TEXT NULL,
  created_at    TEXT NOT NULL,
  views         INTEGER NOT NULL DEFAULT 0,
  status        TEXT NOT NULL,
  decoration_id TEXT NULL REFERENCES decorations(id),
  email         TEXT NULL,          -- PRIVATE
  password_hash TEXT NULL,          -- PRIVATE
  last_login_ip TEXT NULL           -- PRIVATE
);

CREATE TABLE badges (
  user_id INTEGER NOT NULL REFERENCES users(id),
  badge   TEXT NOT NULL,
  PRIMARY KEY (user_id, badge)
);

CREATE TABLE socials (
  id       INTEGER PRIMARY KEY,
  user_id  INTEGER NOT NULL REFERENCES users(id),
  platform TEXT NOT NULL,
  url      TEXT NOT NULL,
  position INTEGER NOT NULL
);
-- Not named by the contract, but any real store has it: reading socials per user needs it.
CREATE INDEX socials_by_user ON socials (user_id, position, id);

CREATE TABLE bans (
  user_id   INTEGER PRIMARY KEY REFERENCES users(id),
  message   TEXT NULL,
  reason    TEXT NULL,
  banned_at TEXT NOT NULL
);
