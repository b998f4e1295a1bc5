#!/bin/sh
# A fake USI engine written in sh that, on "go", starts a child process
# (sleep) and waits for it without ever answering: the driver must kill the
# whole process group, child included. $1 is a file that receives the
# child's pid.
while read -r line; do
	case "$line" in
	usi) printf 'id name HangChild\nusiok\n' ;;
	isready) printf 'readyok\n' ;;
	go*)
		sleep 30 &
		echo $! >"$1"
		wait
		;;
	quit) exit 0 ;;
	esac
done
