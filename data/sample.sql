-- The hand-written sample store: about 25 profiles exercising every state, badge, social,
-- decoration, ban and warning of docs/store.md. `npm run build` turns it (after schema.sql)
-- into data/profiles.db. Private columns hold obviously fake values; they must never be published.

INSERT INTO decorations (id, name, file) VALUES
  ('halo_gold', 'Golden Halo', 'halo_gold.png'),
  ('flame', 'Flame Ring', 'flame ring.png'),
  ('stars', 'Stars & Moon', 'stars&moon?.png');

INSERT INTO users (id, username, display_name, bio, custom_domain, created_at, views, status, decoration_id, email, password_hash, last_login_ip) VALUES
  (1, 'Alice', 'Alice Liddell', 'Curious creator. Down the rabbit hole since 2021.', ' alice.example.com ', '2021-03-01 12:00:00', 1234, 'active', 'halo_gold', 'private-1@mail.invalid', '$argon2id$PRIVATE-HASH-1', '10.66.1.1'),
  (2, 'bob', '', '', '', '2023-06-15 08:00:00', 0, 'active', NULL, 'private-2@mail.invalid', '$argon2id$PRIVATE-HASH-2', '10.66.2.1'),
  (3, 'Carol.Dev', 'Carol "the dev" O''Neil', 'Line one' || char(10) || 'Line two with émoji 🎨 and </script><script>alert(1)</script> and a \ backslash', NULL, '2022-02-28T23:59:59.123Z', 98765, 'active', NULL, 'private-3@mail.invalid', '$argon2id$PRIVATE-HASH-3', '10.66.3.1'),
  (4, 'dave_99', 'Dave', 'Suspended for a while.', NULL, '2020-01-10 10:10:10', 55, 'suspended', NULL, 'private-4@mail.invalid', '$argon2id$PRIVATE-HASH-4', '10.66.4.1'),
  (5, 'Eve-Banned', 'Eve', '', NULL, '2019-07-04T00:00:00Z', 3, 'banned', 'stars', 'private-5@mail.invalid', '$argon2id$PRIVATE-HASH-5', '10.66.5.1'),
  (6, 'frank', 'Frank', 'Suspended, but the bans row is missing (warning).', NULL, '2022-11-11 11:11:11', 7, 'suspended', NULL, 'private-6@mail.invalid', '$argon2id$PRIVATE-HASH-6', '10.66.6.1'),
  (7, 'grace', 'Grace', 'Inactive: never published.', NULL, '2021-01-01 00:00:00', 10, 'inactive', NULL, 'private-7@mail.invalid', '$argon2id$PRIVATE-HASH-7', '10.66.7.1'),
  (8, 'heidi', 'Heidi', 'Deleted: never published.', NULL, '2021-01-02 00:00:00', 11, 'deleted', NULL, 'private-8@mail.invalid', '$argon2id$PRIVATE-HASH-8', '10.66.8.1'),
  (9, 'ivan', 'Ivan', 'Unknown status (warning).', NULL, '2021-01-03 00:00:00', 12, 'archived', NULL, 'private-9@mail.invalid', '$argon2id$PRIVATE-HASH-9', '10.66.9.1'),
  (10, 'judy smith', 'Judy', 'Username with a space (warning).', NULL, '2021-01-04 00:00:00', 13, 'active', NULL, 'private-10@mail.invalid', '$argon2id$PRIVATE-HASH-10', '10.66.10.1'),
  (11, '.hidden', 'Hidden', 'Username starting with a dot (warning).', NULL, '2021-01-05 00:00:00', 14, 'active', NULL, 'private-11@mail.invalid', '$argon2id$PRIVATE-HASH-11', '10.66.11.1'),
  (12, 'mallory', 'Mallory', 'Unparseable created_at (warning).', NULL, 'yesterday', 15, 'active', NULL, 'private-12@mail.invalid', '$argon2id$PRIVATE-HASH-12', '10.66.12.1'),
  (13, 'niaj', 'Niaj', 'Socials that must be dropped (warnings).', NULL, '2023-01-01T10:00:00.5Z', 16, 'active', NULL, 'private-13@mail.invalid', '$argon2id$PRIVATE-HASH-13', '10.66.13.1'),
  (14, 'Olivia', 'Olivia', 'Official, plus an unknown badge that is never published.', 'olivia.example.org', '2018-12-31 23:59:59', 17, 'active', 'flame', 'private-14@mail.invalid', '$argon2id$PRIVATE-HASH-14', '10.66.14.1'),
  (15, 'peggy', 'Peggy', 'decoration_id names no decoration (warning).', NULL, '2024-02-29 12:00:00', 18, 'active', 'missing', 'private-15@mail.invalid', '$argon2id$PRIVATE-HASH-15', '10.66.15.1'),
  (16, 'Quentin', 'Quentin', 'Born on a leap day.', NULL, '2020-02-29 00:00:00', 19, 'active', NULL, 'private-16@mail.invalid', '$argon2id$PRIVATE-HASH-16', '10.66.16.1'),
  (17, 'rupert', 'Rupert', 'Impossible date (warning).', NULL, '2023-02-30 10:00:00', 20, 'active', NULL, 'private-17@mail.invalid', '$argon2id$PRIVATE-HASH-17', '10.66.17.1'),
  (18, 'sybil-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', 'Sybil', 'Username of exactly 64 characters.', NULL, '2024-01-01 00:00:00', 21, 'active', NULL, 'private-18@mail.invalid', '$argon2id$PRIVATE-HASH-18', '10.66.18.1'),
  (19, 'trent-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', 'Trent', 'Username of 65 characters (warning).', NULL, '2024-01-01 00:00:00', 22, 'active', NULL, 'private-19@mail.invalid', '$argon2id$PRIVATE-HASH-19', '10.66.19.1'),
  (20, 'Uma', 'Uma', 'Socials in display order, ties broken by id.', NULL, '2021-08-08 08:08:08', 23, 'active', 'stars', 'private-20@mail.invalid', '$argon2id$PRIVATE-HASH-20', '10.66.20.1'),
  (21, 'Victor', 'Victor', 'Verified only.', '   ', '2022-05-05 05:05:05', 0, 'active', NULL, 'private-21@mail.invalid', '$argon2id$PRIVATE-HASH-21', '10.66.21.1'),
  (22, 'walter', 'Walter', 'Banned with an empty message and reason.', NULL, '2017-03-03 03:03:03', 24, 'banned', NULL, 'private-22@mail.invalid', '$argon2id$PRIVATE-HASH-22', '10.66.22.1'),
  (23, 'xavier', 'Xavier', 'Platform names in any case.', NULL, '2025-10-10T10:10:10.010Z', 25, 'active', NULL, 'private-23@mail.invalid', '$argon2id$PRIVATE-HASH-23', '10.66.23.1'),
  (24, 'yolanda', 'Yolanda', 'Created in the future: accountAgeDays is 0.', NULL, '2099-01-01 00:00:00', 26, 'active', NULL, 'private-24@mail.invalid', '$argon2id$PRIVATE-HASH-24', '10.66.24.1'),
  (25, 'zoe', 'Zoë', 'Helper and verified.', NULL, '2016-06-06 06:06:06', 27, 'active', 'halo_gold', 'private-25@mail.invalid', '$argon2id$PRIVATE-HASH-25', '10.66.25.1'),
  (26, 'amy.lee', 'Amy Lee', 'Dots are allowed inside a username.', NULL, '2015-05-05 05:05:05', 28, 'active', NULL, 'private-26@mail.invalid', '$argon2id$PRIVATE-HASH-26', '10.66.26.1');

-- 'vip' is not a known badge: it is never published.
INSERT INTO badges (user_id, badge) VALUES
  (1, 'verified'), (1, 'helper'), (1, 'official'),
  (3, 'helper'), (14, 'official'), (14, 'vip'), (21, 'verified'), (25, 'verified'), (25, 'helper'), (5, 'verified');

INSERT INTO socials (id, user_id, platform, url, position) VALUES
  (1, 1, 'github', 'https://github.com/alice', 2),
  (2, 1, 'Discord', 'https://discord.gg/alice', 1),
  (3, 13, 'evil', 'javascript:alert(1)', 1),
  (4, 13, 'ftp', 'ftp://files.example.com/niaj', 2),
  (5, 13, 'leaky', 'https://niaj:hunter2@example.com/', 3),
  (6, 13, 'relative', '/u/niaj', 4),
  (7, 13, 'Twitter', 'https://twitter.com/niaj', 5),
  (8, 20, 'steam', 'https://steamcommunity.com/id/uma', 3),
  (9, 20, 'twitch', 'https://twitch.tv/uma', 1),
  (10, 20, 'YouTube', 'https://youtube.com/@uma', 1),
  (11, 23, 'GitHub', '  https://github.com/xavier  ', 1),
  (12, 23, 'GITLAB', 'http://gitlab.com/xavier', 2),
  (13, 4, 'github', 'https://github.com/dave99', 1);

INSERT INTO bans (user_id, message, reason, banned_at) VALUES
  (4, 'This account is suspended pending review.', 'spam', '2024-05-01 08:30:00'),
  (5, 'Banned for repeated violations.', 'harassment', '2023-12-24T18:00:00.250Z'),
  (22, NULL, NULL, '2022-02-02 02:02:02');
