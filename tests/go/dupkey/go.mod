module statetool/dupkey

go 1.19
