-- The sha256 of every earlier load of one file by one source (an unchanged file is not recorded again).
SELECT sha256 FROM raw.ingests WHERE source = $source AND file = $file;
