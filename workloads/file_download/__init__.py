"""A file download (MECaNIC's response-caching evaluation: a file fetched
with wget through the 5G link): the endpoint asks for one file of a small
catalogue by its number (a 32-byte request), the edge's file store answers
with the file's bytes (`file_bytes`, 4 MB by default; seeded random bytes,
which do not compress, like media). What it measures is the time to the last
byte of the answer; the downlink carries almost all of it."""
