package partition

import "strings"

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// Slot returns the Cluster hash slot of key, by the rule Redis Cluster applies: CRC16 (XMODEM)
// of the part between the first '{' and the next '}' when that part is not empty, else of the
// whole key, modulo 16384.
func Slot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	return int(crc16(key)) % Slots
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial 0), the checksum Redis Cluster hashes
// keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^s[i]]
	}
	return crc
}

var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()
