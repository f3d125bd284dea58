echo "tiny-broken: no such base" >&2
return 3
