package list_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/redis/go-redis/v9"
	"github.com/relq/relq/adapters/list"
	"github.com/relq/relq/backend"
	"github.com/relq/relq/internal/redistest"
	"github.com/relq/relq/pubsub"
)

// exampleClient connects to the test Redis; in an application this is
// redis.NewClient(&redis.Options{Addr: "localhost:6379"}) or any redis.UniversalClient.
func exampleClient() *redis.Client {
	opt, err := redis.ParseURL(redistest.SharedURL())
	if err != nil {
		panic(err)
	}
	return redis.NewClient(opt)
}

// A work queue: publish a batch, handle it, and see a failing message retried and then
// dead-lettered after MaxDeliveries.
func Example() {
	client := exampleClient()
	defer client.Close()
	be, err := list.New(client, list.Options{Prefix: "example-" + time.Now().Format("150405.000000")})
	if err != nil {
		panic(err)
	}
	defer be.Close() // its blocking claims' connections, once the subscribers closed
	pub, _ := pubsub.NewPublisher(be, pubsub.PublisherConfig{}, nil)
	sub, _ := pubsub.NewSubscriber(be, pubsub.SubscriberConfig{
		Group:         "emails",
		MaxDeliveries: 2,
		NackBackoff:   pubsub.ExponentialBackoff(10*time.Millisecond, time.Second),
	}, nil)
	defer sub.Close()

	_ = sub.SubscribeInitialize("signups")
	_ = pub.Publish("signups",
		message.NewMessage("1", []byte("ada@example.com")),
		message.NewMessage("2", []byte("not-an-address")),
		message.NewMessage("3", []byte("alan@example.com")),
	)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	msgs, _ := sub.Subscribe(ctx, "signups")
	for handled := 0; handled < 4; handled++ {
		msg := <-msgs
		if string(msg.Payload) == "not-an-address" {
			fmt.Printf("nack %s (attempt %d)\n", msg.Payload, pubsub.Attempt(msg))
			msg.Nack()
			continue
		}
		fmt.Printf("sent %s\n", msg.Payload)
		msg.Ack()
	}

	// The dead letter is recorded by the acker shortly after the last nack.
	var dead []backend.DeadLetter
	for len(dead) == 0 {
		time.Sleep(10 * time.Millisecond)
		dead, _ = be.DeadLetters(ctx, &backend.DeadLettersParams{Topic: "signups", Group: "emails"})
	}
	fmt.Printf("dead letter: %s, %d attempts, %s\n", dead[0].Envelope.Payload, dead[0].Attempts, dead[0].Reason)

	// Output:
	// sent ada@example.com
	// nack not-an-address (attempt 1)
	// sent alan@example.com
	// nack not-an-address (attempt 2)
	// dead letter: not-an-address, 2 attempts, nacked after 2 attempts
}
